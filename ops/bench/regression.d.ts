// Types of ops/bench/regression.js for the TypeScript test suites.
export interface BenchFigures {
  machine?: string;
  date?: string;
  /** referenceUs: the reference's CPU per request measured right after this workload. */
  workloads: Record<string, { rate?: number; serviceUs?: number; databaseUs?: number; generatorUs?: number; referenceUs?: number; failed?: boolean }>;
}
export interface Baseline {
  machine?: string;
  date?: string;
  reference: string;
  /** The commit whose code the ratios were measured on, which ops/bench/same-host.js measures again. */
  commit?: string;
  ratios: Record<string, number>;
}
export interface Comparison {
  name: string;
  before: number;
  now: number;
  rise: number;
  failed: boolean;
}
export declare const TOLERANCE: number;
export declare const REFERENCE: string;
export declare const BASELINE_FILE: string;
export declare const FIGURES_FILE: string;
export declare function ratios(figures: BenchFigures): Record<string, number>;
export declare function compare(figures: BenchFigures, baseline: Baseline, tolerance?: number): Comparison[];
export declare function compareRuns(nowRuns: BenchFigures[], baselineRuns: BenchFigures[], tolerance?: number): Comparison[];
export declare function describe(rows: Comparison[]): string;
