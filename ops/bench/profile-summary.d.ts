// Types of ops/bench/profile-summary.js for the TypeScript test suites.
export declare function summarise(profile: { title: string; stacks: string[][]; all?: number }, options: { top: number; byPackage?: boolean }): string;
