import { Header, SetMetadata, applyDecorators } from '@nestjs/common';

export const SECRET_ANSWER = 'secretAnswer';

/**
 * A route whose success answer carries secret material (a client secret, an OATH seed, a connection
 * string, a token): no cache may keep it, so it answers `Cache-Control: no-store` and, for HTTP/1.0
 * caches, `Pragma: no-cache` (DECISIONS 6; RFC 6749 5.1). Error answers carry both already.
 * test/secret-answers walks every route so marked, and fails for a route whose documented answer
 * names a secret but that lacks the mark.
 */
export const AnswersWithSecrets = (): MethodDecorator =>
  applyDecorators(SetMetadata(SECRET_ANSWER, true), Header('Cache-Control', 'no-store'), Header('Pragma', 'no-cache'));
