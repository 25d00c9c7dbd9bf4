// Reading the CPU profiles `node --cpu-prof` writes: who a sample's script belongs to, and each sample's time.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  /** Microseconds on the monotonic clock (process.hrtime's), when sampling began. */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export function readProfile(file: string): CpuProfile {
  return JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
}

/** The package a script belongs to, or this project's top folders (src/modules/x, src/db, …), or a V8 category. */
export function owner(url: string, functionName: string): string {
  if (url === '') return `(${functionName || 'program'})`; // (garbage collector), (idle), (program)
  if (url.startsWith('node:')) return 'node: built-ins';
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inModules) return inModules[1] as string;
  const local = /\/(src\/modules\/[^/]+|src\/[^/]+|bench|fakes)\//.exec(url);
  return local ? (local[1] as string) : url;
}

/** A function as the summaries name it: its name, file and line, and its owner. */
export function functionLabel(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  return `${functionName || '(anonymous)'} ${path.basename(url)}:${lineNumber + 1} [${owner(url, functionName)}]`;
}
