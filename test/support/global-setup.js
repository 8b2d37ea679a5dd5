const { existingServer, startThrowawayCluster } = require('./pg-cluster');

module.exports = async function globalSetup() {
  let url = await existingServer();
  if (!url) {
    const cluster = await startThrowawayCluster();
    globalThis.__WEFT_THROWAWAY__ = cluster;
    url = cluster.url;
    process.stderr.write(`\n[weft tests] started a throwaway PostgreSQL at ${url}\n`);
  }
  // Workers inherit this; each test file creates its own database on this server.
  process.env.WEFT_TEST_ADMIN_URL = url;
};
