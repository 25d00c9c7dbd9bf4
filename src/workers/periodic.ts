// A periodic job: never overlaps itself, and stop() waits for the run in progress.
export interface PeriodicJob {
  stop(): Promise<void>;
}

export function every(
  ms: number,
  name: string,
  job: () => Promise<unknown>,
  onError: (name: string, err: unknown) => void,
): PeriodicJob {
  let running: Promise<void> | undefined;
  let stopped = false;
  const tick = (): void => {
    if (running || stopped) return;
    running = job()
      .then(
        () => undefined,
        (err: unknown) => onError(name, err),
      )
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(tick, ms);
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
