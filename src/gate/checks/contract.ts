// The release's contract: only declared tools, only declared arguments, each within its rule.
// Guards against a model (or text steering it) inventing tools, arguments or values.
import type { LoadedManifest } from '../../contract/manifest.js';
import type { TaskContext } from '../../contract/context.js';
import type { ToolDecl } from '../../contract/manifest-types.js';
import { checkRule } from '../../contract/rules.js';
import type { Call } from '../../core/call.js';
import { PASS, refuse, type Verdict } from '../verdict.js';

export function resolveTool(call: Call, m: LoadedManifest): ToolDecl | undefined {
  return Object.prototype.hasOwnProperty.call(m.manifest.tools, call.tool) ? m.manifest.tools[call.tool] : undefined;
}

export function checkContract(call: Call, m: LoadedManifest, ctx: TaskContext): Verdict {
  const tool = resolveTool(call, m);
  if (!tool) return refuse('undeclared_tool', 'the manifest does not declare this tool');
  for (const name of Object.keys(call.arguments)) {
    if (!Object.prototype.hasOwnProperty.call(tool.arguments, name))
      // The argument's name is model-chosen text: it is not echoed back.
      return refuse('undeclared_argument', 'an argument the tool does not list');
  }
  for (const [name, rule] of Object.entries(tool.arguments)) {
    const has = Object.prototype.hasOwnProperty.call(call.arguments, name);
    if (!has) {
      if (rule.required) return refuse('argument_invalid', `argument "${name}" is required`);
      continue;
    }
    const failure = checkRule(rule, call.arguments[name], name, m, ctx);
    if (failure) return refuse(failure.code, failure.detail);
  }
  return PASS;
}
