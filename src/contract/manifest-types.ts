// The manifest v1 (product.md section 3) as types: the release's contract of what may ever be called.

export type ArgType = 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'object';

export interface ArgumentRule {
  type?: ArgType;
  required?: boolean;
  enum?: unknown[];
  pattern?: string; // full match, linear time (re2js)
  min_len?: number; // code points
  max_len?: number;
  minimum?: number;
  maximum?: number;
  max_items?: number;
  items?: ArgumentRule;
  one_of_context?: string; // dotted path into the task context
}

export interface ToolDecl {
  effect: 'read' | 'write';
  approval?: 'required' | 'none';
  returns?: string; // label of results
  accepts?: string; // sink ceiling
  operation_id?: string; // argument carrying the operation id
  arguments: Record<string, ArgumentRule>;
}

export interface ClassifyRule {
  label: string;
  pattern: string;
}

export interface Manifest {
  version: 1;
  release: string;
  labels: string[]; // lowest first; default [public, internal, confidential, restricted]
  tools: Record<string, ToolDecl>;
  classify: ClassifyRule[];
  pins?: Record<string, string>;
  effects?: Record<string, unknown>; // execution scope (issue 9)
}
