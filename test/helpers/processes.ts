// Child processes the tests start and must not leave behind (service nodes, HAProxy, PgBouncer): each in a process
// group of its own, so killing the group also kills what it started; output kept for failure messages.
import { spawn, type ChildProcess } from 'node:child_process';
import { PROJECT_ROOT } from './start-command.js';

export interface Child {
  child: ChildProcess;
  /** The last 20,000 characters of its stdout and stderr. */
  output: () => string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

export function spawnGroup(command: string, args: string[], env: NodeJS.ProcessEnv): Child {
  const child = spawn(command, args, { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let out = '';
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });
  return { child, output: () => out.slice(-20_000), exited };
}

/** Kills the process group (the process and anything it started); a no-op once it has exited. */
export function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    child.kill('SIGKILL');
  }
}
