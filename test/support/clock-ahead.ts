/**
 * Preloaded (`node --require`) into a service process that stands for a host whose clock is `CLOCK_AHEAD_MS` ahead
 * of the others': only the process's own clock (`Date.now`) moves; Postgres, Temporal and everything else are real.
 */
const aheadMs = Number(process.env.CLOCK_AHEAD_MS ?? 0);
const realNow = Date.now;
Date.now = () => realNow() + aheadMs;
