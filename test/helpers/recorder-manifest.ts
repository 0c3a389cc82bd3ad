// The manifest the wire suites run the recording upstream's recorder tools under (upstream.ts):
// echo with three typed arguments, and hang and slow without any.
export function recorderManifest(release: string, tools: ('hang' | 'slow')[] = ['hang', 'slow']): string {
  return `version: 1
release: ${release}
tools:
  echo:
    effect: read
    arguments:
      text: { type: string }
      n: { type: number }
      to: { type: string }
${tools.map((t) => `  ${t}:\n    effect: read\n    arguments: {}\n`).join('')}`;
}
