// Tests are compiled by `tsc` into dist/ first; ava runs the JavaScript.
// Two files at a time on a 2-core machine; integration tests that spawn nodes run serially inside their file.
export default {
  files: ['dist/test/**/*.test.js'],
  concurrency: 2,
  workerThreads: false,
  timeout: '120s',
  verbose: true,
};
