// The id of a line the gate refuses, read without parsing the line (product.md section 1).
// Guards against a host left waiting for an answer it cannot match: a refusal for size or
// content still names the request's id whenever it can be read for sure. The scan walks the
// top level of one object byte by byte and holds at most a few hundred bytes whatever the
// line's size, so it also reads the `id` at the end of a 5 MB line (the SDK writes `id` last).
// "For sure" means: the line opens an object, its top level is well formed up to and including
// the `id` member's value, no other member of that well-formed part folds to `id`, and the
// value is a string or an integer that the strict parser accepts. Anything else gives null.
import { parseStrict, WireError } from './strict-parse.js';
import { isRpcId, MAX_ID_BYTES, type RpcId } from './jsonrpc.js';

const MAX_KEY = 64; // longer keys cannot be `id` (even fully escaped it is 12 bytes)
const MAX_ID = MAX_ID_BYTES; // an id longer than this is not echoed back (ADR 108)

type State =
  | 'start' // before the top-level value
  | 'key?' // after `{` or `,`: a key (or `}` right after `{`)
  | 'key' // inside a top-level key
  | 'colon'
  | 'value?' // after `:`
  | 'string' // inside a top-level string value
  | 'scalar' // inside a top-level number or literal
  | 'nested' // inside a top-level object or array value
  | 'comma' // after a value: `,` or `}`
  | 'done' // the top-level object closed
  | 'fail';

const isWs = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;

export class IdScanner {
  private state: State = 'start';
  private token: number[] = []; // the current key, or the value of an `id` member
  private tokenTooLong = false;
  private escaped = false; // inside a string, after a backslash
  private inString = false; // inside a string within a nested value
  private depth = 0; // nesting inside a top-level value
  private afterOpen = false; // `{` just seen: `}` may follow
  private idMembers = 0; // top-level members whose key folds to `id`
  private capturing = false; // the current value belongs to the exact key `id`
  private idToken: Buffer | null = null;
  private sawMethod = false; // a top-level `method`: a request or a notification
  private sawOutcome = false; // a top-level `result` or `error`: a response

  push(chunk: Uint8Array): void {
    for (let i = 0; i < chunk.length && this.state !== 'fail' && this.state !== 'done'; i++) this.step(chunk[i]!);
  }

  /**
   * The id of a response, read so far: the line's top level has named its `result` or `error`
   * and its only `id` member (a string or an integer), and no `method`. Known while the line is
   * still coming when the id and the outcome come first; what follows may still make the line
   * unreadable (it is dropped then either way: it answered this id with nothing readable).
   */
  answered(): RpcId | null {
    if (!this.sawOutcome || this.sawMethod || this.idMembers !== 1 || this.idToken === null || this.capturing) return null;
    return this.result();
  }

  /** The id, once the whole line was pushed; null when it cannot be read for sure. */
  result(): RpcId | null {
    // Past a break in the top level (or a line that ends inside it) nothing more is read: an id
    // the well-formed part named stays readable, and a later one could not be told apart.
    if (this.state === 'start' || this.idMembers !== 1 || this.idToken === null) return null;
    try {
      const v = parseStrict(this.idToken.toString('utf8'));
      return isRpcId(v) ? v : null;
    } catch (e) {
      if (e instanceof WireError) return null;
      throw e;
    }
  }

  private keep(b: number): void {
    if (this.state !== 'key' && !this.capturing) return; // only keys and the id's value are held
    if (this.token.length >= (this.state === 'key' ? MAX_KEY : MAX_ID)) this.tokenTooLong = true;
    else this.token.push(b);
  }

  private endKey(): void {
    let key: string | null = null;
    if (!this.tokenTooLong) {
      try {
        const v = parseStrict(Buffer.from(this.token).toString('utf8'));
        key = typeof v === 'string' ? v : null;
      } catch (e) {
        if (!(e instanceof WireError)) throw e;
        this.state = 'fail';
        return;
      }
    }
    if (key === 'method') this.sawMethod = true;
    if (key === 'result' || key === 'error') this.sawOutcome = true;
    const folds = key !== null && key.toLowerCase() === 'id';
    if (folds) this.idMembers++;
    this.capturing = key === 'id';
    this.token = [];
    this.tokenTooLong = false;
    this.state = 'colon';
  }

  private endValue(): void {
    if (this.capturing) this.idToken = this.tokenTooLong ? null : Buffer.from(this.token);
    this.capturing = false;
    this.token = [];
    this.tokenTooLong = false;
    this.state = 'comma';
  }

  private step(b: number): void {
    switch (this.state) {
      case 'start':
        if (isWs(b)) return;
        if (b !== 0x7b) return void (this.state = 'fail'); // not an object: a batch or a scalar
        this.state = 'key?';
        this.afterOpen = true;
        return;
      case 'key?':
        if (isWs(b)) return;
        if (b === 0x7d && this.afterOpen) return void (this.state = 'done');
        if (b !== 0x22) return void (this.state = 'fail');
        this.afterOpen = false;
        this.state = 'key';
        this.keep(b);
        return;
      case 'key':
      case 'string':
        this.keep(b);
        if (this.escaped) this.escaped = false;
        else if (b === 0x5c) this.escaped = true;
        else if (b === 0x22) return this.state === 'key' ? this.endKey() : this.endValue();
        return;
      case 'colon':
        if (isWs(b)) return;
        this.state = b === 0x3a ? 'value?' : 'fail';
        return;
      case 'value?':
        if (isWs(b)) return;
        if (b === 0x22) {
          this.state = 'string';
          this.keep(b);
        } else if (b === 0x7b || b === 0x5b) {
          this.state = 'nested';
          this.depth = 1;
          this.capturing = false; // an object or array is never a usable id
        } else if (b === 0x2c || b === 0x7d || b === 0x3a || b === 0x5d) {
          this.state = 'fail';
        } else {
          this.state = 'scalar';
          this.keep(b);
        }
        return;
      case 'scalar':
        if (isWs(b) || b === 0x2c || b === 0x7d) {
          this.endValue();
          return this.step(b);
        }
        this.keep(b);
        return;
      case 'nested':
        if (this.inString) {
          if (this.escaped) this.escaped = false;
          else if (b === 0x5c) this.escaped = true;
          else if (b === 0x22) this.inString = false;
        } else if (b === 0x22) this.inString = true;
        else if (b === 0x7b || b === 0x5b) this.depth++;
        else if (b === 0x7d || b === 0x5d) {
          if (--this.depth === 0) this.endValue();
        }
        return;
      case 'comma':
        if (isWs(b)) return;
        if (b === 0x2c) this.state = 'key?';
        else if (b === 0x7d) this.state = 'done';
        else this.state = 'fail';
        return;
      default:
        return;
    }
  }
}

/** The id of a complete line, by the same scan (product.md section 1). */
export function scanId(line: Uint8Array): RpcId | null {
  const s = new IdScanner();
  s.push(line);
  return s.result();
}
