// Types of ops/service-command.js for the TypeScript test suites.
export declare const SERVICE_ENTRY: string;
export declare const SERVICE_NODE_FLAGS: readonly string[];
export declare function serviceArgs(extraFlags?: readonly string[], root?: string): string[];
