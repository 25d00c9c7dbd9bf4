// A periodic job: never overlaps itself, and stop() waits for the run in progress. While the database is away (a
// restart, a failover) the job backs off, by a pause that doubles up to MAX_PAUSE_MS, and resumes by itself.
import { isDatabaseUnavailable } from '../db/errors.js';

export interface PeriodicJob {
  stop(): Promise<void>;
}

/** What a job tells about its runs. */
export interface JobReport {
  /** A run failed for another reason than the database being away: logged, and the next tick runs as usual. */
  failed(name: string, err: unknown): void;
  /** The database went away: the job pauses. Told once per outage, with the first error. */
  paused(name: string, err: unknown): void;
  /** The database answers again: the job runs at its pace again. */
  resumed(name: string, pausedMs: number): void;
}

const FIRST_PAUSE_MS = 250;
/** The longest pause between two tries while the database is away: a failover here takes 3 to 4 s. */
export const MAX_PAUSE_MS = 2000;

export function every(ms: number, name: string, job: () => Promise<unknown>, report: JobReport): PeriodicJob {
  let running: Promise<void> | undefined;
  let stopped = false;
  let outageSince: number | undefined;
  let pause = 0;
  let nextTry = 0;
  const tick = (): void => {
    if (running || stopped || Date.now() < nextTry) return;
    nextTry = Date.now() + ms;
    running = job()
      .then(
        () => {
          if (outageSince !== undefined) report.resumed(name, Date.now() - outageSince);
          outageSince = undefined;
          pause = 0;
        },
        (err: unknown) => {
          if (!isDatabaseUnavailable(err)) return report.failed(name, err);
          if (outageSince === undefined) {
            outageSince = Date.now();
            report.paused(name, err);
          }
          pause = Math.min(MAX_PAUSE_MS, Math.max(FIRST_PAUSE_MS, pause * 2));
          nextTry = Date.now() + pause;
        },
      )
      .finally(() => {
        running = undefined;
      });
  };
  // The timer looks at least as often as the shortest pause, so a paused job is tried again on time; a run starts
  // `ms` after the last one started, as with a plain interval.
  const timer = setInterval(tick, Math.min(ms, FIRST_PAUSE_MS));
  timer.unref();
  tick();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
