// Reads by key from many callers, made together: while one read is in flight, the keys asked for meanwhile wait for it
// to end, then are read together by the next, in one statement. A lone caller's read goes at once. Each caller gets a
// read that began after it asked, never one already under way: it sees at least what had committed when it asked,
// as a read of its own would.

export class Coalescer<K, V> {
  private waiting = new Map<K, { resolve: (value: V | undefined) => void; reject: (err: unknown) => void }[]>();
  private reading = false;
  /** Reads made, and the keys they carried. */
  readonly stats = { reads: 0, keys: 0 };

  constructor(
    /** Reads these keys, distinct, in one statement; answers what it found by key (a key not found is left out). */
    private readonly readMany: (keys: K[]) => Promise<Map<K, V>>,
    /** Keys in one read at most; the rest wait for the next. */
    private readonly maxKeys = 500,
  ) {}

  /** What the next read finds for `key`: undefined when it finds nothing. A read that fails fails its callers. */
  get(key: K): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const callers = this.waiting.get(key);
      if (callers) callers.push({ resolve, reject });
      else this.waiting.set(key, [{ resolve, reject }]);
      this.read();
    });
  }

  private read(): void {
    if (this.reading || this.waiting.size === 0) return;
    const batch = new Map([...this.waiting].slice(0, this.maxKeys));
    for (const key of batch.keys()) this.waiting.delete(key);
    this.reading = true;
    this.stats.reads += 1;
    this.stats.keys += batch.size;
    void Promise.resolve()
      .then(() => this.readMany([...batch.keys()]))
      .then((found) => {
        for (const [key, callers] of batch) for (const caller of callers) caller.resolve(found.get(key));
      })
      // A read that failed, or whose answer could not be read: its callers fail (a caller already answered stays so).
      .catch((err: unknown) => {
        for (const callers of batch.values()) for (const caller of callers) caller.reject(err);
      })
      .finally(() => {
        this.reading = false;
        this.read();
      });
  }
}
