// A test reporter for run-tests.mjs: the time of each test file (the sum of its top-level
// tests), written as one JSON object when the run ends, so every run names its slowest files.
export default async function* fileTimes(source) {
  const perFile = {};
  for await (const event of source) {
    if ((event.type !== 'test:pass' && event.type !== 'test:fail') || event.data.nesting !== 0) continue;
    const file = event.data.file ?? '(unknown file)';
    perFile[file] = (perFile[file] ?? 0) + (event.data.details?.duration_ms ?? 0);
  }
  yield JSON.stringify(perFile) + '\n';
}
