import type { Services } from '../src/services';
import type { BodyBytesInFlight } from './middleware/body-bytes-in-flight';
import type { ActionEventHub } from './live/action-event-hub';
import type { LinkMailer } from '../src/users/link-mail';
import type { InteractiveDemandMeter } from '../src/batches/interactive-demand';

/** Everything the API's handlers use, built once at start: the use cases' services and the HTTP process's own. */
export interface ApiServices extends Services {
  /** The request-body bytes the process may hold at once (`MAX_BODY_BYTES_IN_FLIGHT`), shared by every route. */
  bodyBytesInFlight: BodyBytesInFlight;
  /** The process's one LISTEN connection for live progress, shared by every event stream (closed at shutdown). */
  liveEvents: ActionEventHub;
  /** Sends the dashboard's one-time links (SMTP, or the service log). */
  linkMail: LinkMailer;
  /** The interactive requests in flight, for batches to yield to (left out: not measured, batches never yield to this process). */
  interactiveDemand?: InteractiveDemandMeter;
}
