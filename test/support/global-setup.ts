// The runner's global setup: find the PostgreSQL server the tests use, or start a throwaway one.
import { existingServer, startThrowawayCluster, stopThrowawayCluster, type ThrowawayCluster } from './pg-cluster.js';

export default async function globalSetup(): Promise<() => void> {
  let url = await existingServer();
  let cluster: ThrowawayCluster | undefined;
  if (!url) {
    cluster = await startThrowawayCluster();
    url = cluster.url;
    process.stderr.write(`\n[weft tests] started a throwaway PostgreSQL at ${url}\n`);
  }
  // Test workers inherit this; each test file creates its own database on this server.
  process.env.WEFT_TEST_ADMIN_URL = url;
  return () => {
    if (cluster) stopThrowawayCluster(cluster);
  };
}
