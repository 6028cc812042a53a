/**
 * The request-body bytes this process holds at once, across all requests and keys. A body costs several times its
 * size while it is read, parsed and decoded, and the rate limit counts requests per minute, not bytes in flight:
 * without this cap a few large bodies sent together could take the process past its memory.
 */
export class BodyBytesInFlight {
  private held = 0;

  constructor(readonly limit: number) {}

  /** Bytes reserved by requests that have not finished yet. */
  get bytes(): number {
    return this.held;
  }

  /** An empty reservation for one request; `take` grows it, `release` gives it all back (once). */
  reserve(): BodyReservation {
    let mine = 0;
    let released = false;
    return {
      take: (bytes) => {
        // A body alone in the process always passes, so the largest legal body is served whatever the limit.
        if (released || (this.held + bytes > this.limit && this.held > mine)) return false;
        this.held += bytes;
        mine += bytes;
        return true;
      },
      get bytes() {
        return mine;
      },
      release: () => {
        if (released) return;
        released = true;
        this.held -= mine;
      },
    };
  }
}

export interface BodyReservation {
  /** Adds `bytes` to the reservation if they fit; false (nothing taken) when they do not. */
  take(bytes: number): boolean;
  readonly bytes: number;
  release(): void;
}
