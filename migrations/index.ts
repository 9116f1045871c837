import { CreateTokenServiceSchema1763700000000 } from './1763700000000-CreateTokenServiceSchema';

/** Every migration, in order. The data source takes classes, not a glob, so source and dist/ behave alike. */
export const MIGRATIONS = [CreateTokenServiceSchema1763700000000];
