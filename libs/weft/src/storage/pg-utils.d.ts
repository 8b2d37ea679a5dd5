// node-pg's parameter conversion (pg/lib/utils.js, exported by pg's "./lib/*" entry), which its
// type definitions do not describe: what storage/pg-batch.ts uses of it.
declare module 'pg/lib/utils.js' {
  const utils: { prepareValue(value: unknown): unknown };
  export default utils;
}
