// Types of bench/ceiling.js for the TypeScript benches.
export interface CeilingMeasure {
  clients: number;
  tps: number;
  latencyMs?: number;
}

export interface Ceiling {
  measure(clients: number, cpus?: string): CeilingMeasure;
  nodeCommit(n?: number): Promise<{ commits: number; p50Ms: number; meanMs: number }>;
  drop(): Promise<void>;
  seconds: number;
}

export function adminUrl(): string;
export function openCeiling(): Promise<Ceiling>;
