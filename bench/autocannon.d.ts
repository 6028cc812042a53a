/** The part of autocannon's programmatic API the benchmark uses (the package ships no types). */
declare module 'autocannon' {
  interface Histogram { average: number; mean: number; p50: number; p90: number; p99: number; max: number; min: number; total: number }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    pipelining?: number;
    timeout?: number;
    /** Each request in turn; `setupRequest` may change a request before it is sent (a header per request). */
    requests?: { setupRequest?: (req: { headers?: Record<string, string> }) => { headers?: Record<string, string> } }[];
  }
  interface Result {
    duration: number;
    requests: Histogram;
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
    resets: number;
  }
  function autocannon(options: Options): Promise<Result>;
  export = autocannon;
}
