// Types of ops/bench/flamegraph.js and ops/bench/cpuprofile.js for the TypeScript test suites.
export interface CallTreeNode {
  name: string;
  count: number;
  children: Map<string, CallTreeNode>;
}
export declare function callTree(stacks: string[][]): CallTreeNode;
export declare function flameGraph(stacks: string[][], options: { title: string; subtitle?: string; minWidth?: number }): string;
export declare function perfStacks(text: string, thread?: string): string[][];
