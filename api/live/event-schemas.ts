/** How the live-progress routes are documented: one `text/event-stream` answer, its events and their data. */
import type { RouteResponse } from '../route';

const V1_FINAL = 'completed, failed, cancelled';
const V2_FINAL = 'succeeded, failed, dead_letter, cancelled';

/** The 200 answer (and the 404 of v2) of `GET .../events`, for `v1` (an action) or `v2` (a job). */
export function actionEventStreamResponses(version: 'v1' | 'v2'): Record<number, RouteResponse> {
  const subject = version === 'v1' ? 'action' : 'job';
  const finals = version === 'v1' ? V1_FINAL : V2_FINAL;
  const description = [
    `Server-Sent Events, one per change of the ${subject} (status, phase, attempt, provider, percent), from its creation or after`,
    '`Last-Event-ID`. Each event has an `id:` (increasing within the stream; resume with the last one seen), an `event:` name and a',
    `JSON \`data:\` with \`${version === 'v1' ? 'action_id' : 'job_id'}\`, \`status\`, \`phase\`${version === 'v1' ? ' and `attempt` (of its v2 job; null for a v1 action)' : ', `attempt`'},`,
    '`provider`, `percent` (null when the provider reports none) and `at`. Changes before the end are named `progress`; the final one',
    `is named after the final status (${finals}), carries \`result_url\` and \`result_url_expires_at\` (signed now; null unless it`,
    `succeeded) and \`error_message\`${version === 'v2' ? ', `error_code` and `retryable`' : ''}, and ends the stream. A comment line (\`: heartbeat\`) is sent`,
    'every 15 s (`LIVE_HEARTBEAT_SECONDS`). A client that leaves 64 KiB unread is disconnected, and a stream open for an hour',
    '(`LIVE_STREAM_MAX_SECONDS`) is ended without a final event: either way the client resumes with `Last-Event-ID`.',
  ].join(' ');
  const answers: Record<number, RouteResponse> = {
    200: {
      description,
      mediaType: 'text/event-stream',
      schema: {
        type: 'string',
        description: 'Lines of `id:`, `event:` and `data:`, events separated by a blank line',
        examples: [`retry: 3000\n\nid: 1\nevent: progress\ndata: {"status":"${version === 'v1' ? 'pending' : 'queued'}","phase":${version === 'v1' ? 'null' : '"queued"'},"attempt":${version === 'v1' ? 'null' : '0'},"provider":"local","percent":null}\n\n`],
      },
    },
  };
  answers[204] = { description: '`Last-Event-ID` is the final event: nothing more will come (an EventSource stops reconnecting)' };
  answers[429] = {
    description: '`too_many_streams`: this API key holds `LIVE_STREAMS_PER_KEY` streams open in this API process (`details.limit`; '
      + '`Retry-After`)',
  };
  answers[503] = { description: '`generation_unavailable`: the API process holds `LIVE_STREAMS_PER_PROCESS` streams (`Retry-After`); poll, or try again' };
  if (version === 'v2') answers[404] = { description: '`not_found`: unknown, malformed or another account\'s job id' };
  return answers;
}
