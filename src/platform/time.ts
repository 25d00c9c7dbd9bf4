// Times of successive changes to one object.

/** Now, but always after the previous change, so an object's changes and events sort in the order they happened. */
export function stepTime(previous: Date): Date {
  return new Date(Math.max(Date.now(), previous.getTime() + 1));
}
