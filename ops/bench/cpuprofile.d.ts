// Types of ops/bench/cpuprofile.js for the TypeScript test suites.
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}
export interface ProfileWindow {
  last?: number;
  skipEnd?: number;
  from?: number;
  to?: number;
}
export declare function parseWindowArgs(argv: string[], extra?: string[]): { files: string[]; window: ProfileWindow; rest: Record<string, string> };
export declare function shortUrl(url: string): string;
export declare function label(node: CpuProfile['nodes'][number]): string;
export declare function samplesInWindow(profile: CpuProfile, window: ProfileWindow): { start: number; stop: number; all: number; stacks: string[][] };
export declare function readProfile(file: string): CpuProfile;
export declare function packageOf(frameLabel: string): string | undefined;
export declare function samplesByPackage(stacks: string[][]): Map<string, number>;
