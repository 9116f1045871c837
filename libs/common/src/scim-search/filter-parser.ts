import { DomainError } from '../domain-error';
import { COMPARE_OPERATORS, CompareOperator, FilterNode, FilterValue } from './filter-ast';

/**
 * A small recursive-descent parser of our own for the SCIM filter grammar (RFC 7644 section
 * 3.4.2.2), so that every accepted form is in the test table beside it and nothing else is:
 *
 *   filter    = orExpr
 *   orExpr    = andExpr *("or" andExpr)                ; "and" binds tighter than "or"
 *   andExpr   = unary *("and" unary)
 *   unary     = "not" "(" filter ")" / "(" filter ")" / attrExpr
 *   attrExpr  = attrPath "pr" / attrPath compareOp compValue / attrPath "[" valFilter "]"
 *   valFilter = the same grammar without a nested "[" (RFC 7644: valFilter has no valuePath)
 *   compValue = false / null / true / number / string   ; JSON literals
 *   attrPath  = [URI ":"] ATTRNAME *2subAttr   (RFC 7644 allows one; a reference inside a complex
 *               attribute, such as ContentRequest's target.device.value, needs two)
 *
 * Operators and the logical words are case-insensitive (RFC 7644: "operators ... are case
 * insensitive"). Errors are DomainError INVALID_FILTER (400 invalidFilter) whose detail says where and
 * what was expected. Length and nesting are bounded so that no filter can exhaust the stack.
 */
export const MAX_FILTER_LENGTH = 4096;
export const MAX_FILTER_DEPTH = 32;

type Token =
  | { type: 'word'; text: string; at: number }
  | { type: 'string'; value: string; text: string; at: number }
  | { type: 'number'; value: number; text: string; at: number }
  | { type: '(' | ')' | '[' | ']'; text: string; at: number }
  | { type: 'end'; text: string; at: number };

/** ATTRNAME and URI characters: `urn:vendor:scim:api:cms:1.0:Device:externalIds.CUID`, `$ref`. */
const WORD = /[A-Za-z$][A-Za-z0-9_$:.-]*/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
/** A JSON string: no raw control characters; escapes are checked by JSON.parse. */
// eslint-disable-next-line no-control-regex -- JSON (RFC 8259 7) forbids raw U+0000-U+001F in strings; the class says so.
const STRING = /"(?:[^"\\\u0000-\u001f]|\\.)*"/y;
const WHITESPACE = /[ \t\r\n]+/y;
const ATTR_PATH = /^(?:[A-Za-z][A-Za-z0-9._-]*(?::[A-Za-z0-9._-]+)*:)?[A-Za-z$][A-Za-z0-9_$-]*(?:\.[A-Za-z$][A-Za-z0-9_$-]*){0,2}$/;

export function invalidFilter(detail: string): DomainError {
  return new DomainError('INVALID_FILTER', detail);
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  const match = (pattern: RegExp): string | undefined => {
    pattern.lastIndex = at;
    const found = pattern.exec(text);
    return found ? found[0] : undefined;
  };
  while (at < text.length) {
    const space = match(WHITESPACE);
    if (space) {
      at += space.length;
      continue;
    }
    const char = text[at];
    if (char === '(' || char === ')' || char === '[' || char === ']') {
      tokens.push({ type: char, text: char, at });
      at += 1;
      continue;
    }
    if (char === '"') {
      const literal = match(STRING);
      if (!literal) throw invalidFilter(`Invalid filter: the string starting at position ${at + 1} is not closed or holds a raw control character.`);
      let value: string;
      try {
        value = JSON.parse(literal) as string;
      } catch {
        throw invalidFilter(`Invalid filter: the string at position ${at + 1} has an invalid escape sequence.`);
      }
      tokens.push({ type: 'string', value, text: literal, at });
      at += literal.length;
      continue;
    }
    const number = match(NUMBER);
    if (number) {
      tokens.push({ type: 'number', value: Number(number), text: number, at });
      at += number.length;
      continue;
    }
    const word = match(WORD);
    if (word) {
      tokens.push({ type: 'word', text: word, at });
      at += word.length;
      continue;
    }
    throw invalidFilter(`Invalid filter: unexpected character ${JSON.stringify(char)} at position ${at + 1}.`);
  }
  tokens.push({ type: 'end', text: 'the end of the filter', at });
  return tokens;
}

const isOperator = (word: string): word is CompareOperator => (COMPARE_OPERATORS as readonly string[]).includes(word);

class Parser {
  private index = 0;
  private depth = 0;

  constructor(private readonly tokens: Token[]) {}

  parse(): FilterNode {
    const filter = this.orExpr(false);
    const next = this.peek();
    if (next.type !== 'end') throw this.unexpected(next, next.type === ')' ? 'no unmatched ")"' : '"and", "or" or the end of the filter');
    return filter;
  }

  private orExpr(inValuePath: boolean): FilterNode {
    let left = this.andExpr(inValuePath);
    while (this.isKeyword('or')) {
      this.index++;
      left = { kind: 'or', left, right: this.andExpr(inValuePath) };
    }
    return left;
  }

  private andExpr(inValuePath: boolean): FilterNode {
    let left = this.unary(inValuePath);
    while (this.isKeyword('and')) {
      this.index++;
      left = { kind: 'and', left, right: this.unary(inValuePath) };
    }
    return left;
  }

  private unary(inValuePath: boolean): FilterNode {
    if (++this.depth > MAX_FILTER_DEPTH) throw invalidFilter(`Invalid filter: more than ${MAX_FILTER_DEPTH} nested expressions.`);
    try {
      const token = this.peek();
      if (this.isKeyword('not')) {
        this.index++;
        this.expect('(', '"(" after "not" (RFC 7644: not ( filter ))');
        const filter = this.orExpr(inValuePath);
        this.expect(')', '")" closing "not ("');
        return { kind: 'not', filter };
      }
      if (token.type === '(') {
        this.index++;
        const filter = this.orExpr(inValuePath);
        this.expect(')', '")"');
        return filter;
      }
      return this.attrExpr(inValuePath);
    } finally {
      this.depth--;
    }
  }

  private attrExpr(inValuePath: boolean): FilterNode {
    const token = this.next();
    if (token.type !== 'word' || ['and', 'or', 'not'].includes(token.text.toLowerCase())) {
      throw this.unexpected(token, 'an attribute name');
    }
    if (!ATTR_PATH.test(token.text)) throw invalidFilter(`Invalid filter: "${token.text}" at position ${token.at + 1} is not an attribute path.`);
    const path = token.text;
    const following = this.next();
    if (following.type === '[') {
      if (inValuePath)
        throw invalidFilter(`Invalid filter: "[" at position ${following.at + 1} opens a value filter inside another one, which SCIM does not allow.`);
      if (path.includes('.')) throw invalidFilter(`Invalid filter: a value filter applies to a multi-valued attribute, not to the sub-attribute "${path}".`);
      const filter = this.orExpr(true);
      this.expect(']', '"]" closing the value filter');
      return { kind: 'valuePath', path, filter };
    }
    if (following.type !== 'word') throw this.unexpected(following, `an operator (pr, ${COMPARE_OPERATORS.join(', ')}) after "${path}"`);
    const op = following.text.toLowerCase();
    if (op === 'pr') return { kind: 'present', path };
    if (!isOperator(op)) throw this.unexpected(following, `an operator (pr, ${COMPARE_OPERATORS.join(', ')}) after "${path}"`);
    return { kind: 'compare', path, op, value: this.value(path, op) };
  }

  private value(path: string, op: string): FilterValue {
    const token = this.next();
    if (token.type === 'string' || token.type === 'number') return token.value;
    if (token.type === 'word') {
      const word = token.text.toLowerCase();
      if (word === 'true') return true;
      if (word === 'false') return false;
      if (word === 'null') return null;
    }
    throw this.unexpected(token, `a value after "${path} ${op}": a string in double quotes, a number, true, false or null`);
  }

  private isKeyword(word: string): boolean {
    const token = this.peek();
    return token.type === 'word' && token.text.toLowerCase() === word;
  }

  private expect(type: Token['type'], what: string): void {
    const token = this.next();
    if (token.type !== type) throw this.unexpected(token, what);
  }

  private peek(): Token {
    return this.tokens[this.index];
  }

  private next(): Token {
    const token = this.tokens[this.index];
    if (token.type !== 'end') this.index++;
    return token;
  }

  private unexpected(token: Token, expected: string): DomainError {
    const found = token.type === 'end' ? token.text : `"${token.text.slice(0, 40)}" at position ${token.at + 1}`;
    return invalidFilter(`Invalid filter: expected ${expected}, found ${found}.`);
  }
}

/** Parses a SCIM filter; throws INVALID_FILTER with a detail a person can act on. */
export function parseFilter(text: string): FilterNode {
  if (typeof text !== 'string' || text.trim() === '') throw invalidFilter('Invalid filter: the filter is empty.');
  if (text.length > MAX_FILTER_LENGTH) throw invalidFilter(`Invalid filter: longer than ${MAX_FILTER_LENGTH} characters.`);
  return new Parser(tokenize(text)).parse();
}
