const { stopThrowawayCluster } = require('./pg-cluster');

module.exports = async function globalTeardown() {
  if (globalThis.__WEFT_THROWAWAY__) stopThrowawayCluster(globalThis.__WEFT_THROWAWAY__);
};
