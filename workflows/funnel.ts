/**
 * One funnel session: a conversation from photos to a card over minutes or days. The API starts it once the
 * product is recognised; each later step is an update (`addIdea`, `applySetup`, `recordCard`) whose validator
 * refuses it when out of order, before it enters history. Each step resets the idle timer; a session left alone
 * for `idleTimeoutSeconds` ends (`expireFunnel`). Updates run one at a time, so ideas take their places in order.
 * After `STEPS_PER_RUN` steps the session continues as new, carrying its state, so history stays bounded.
 */
import { ActivityFailure, allHandlersFinished, ApplicationFailure, condition, continueAsNew, proxyActivities, setHandler } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { FUNNEL_REFUSALS, FunnelSetup, MAX_FUNNEL_IDEAS } from '../src/funnels/session';
import {
  FUNNEL_UPDATES, type FunnelOutcome, type FunnelState, type FunnelWorkflowInput, NON_RETRYABLE_FAILURE_TYPES, SHOWN_FAILURE_TYPES, TIMEOUTS,
} from '../src/temporal/contract';

const bookkeeping = proxyActivities<Activities>({ ...TIMEOUTS.bookkeeping, retry: TIMEOUTS.bookkeepingRetry });

/** The text provider answers a person who waits: a couple of quick retries of a passing failure, no more. */
const writer = proxyActivities<Activities>({
  startToCloseTimeout: '90 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 3, nonRetryableErrorTypes: NON_RETRYABLE_FAILURE_TYPES },
});

export const STEPS_PER_RUN = 50;




const refuse = (message: string, type: string) => ApplicationFailure.create({ message, type, nonRetryable: true });

export async function funnelWorkflow({ funnelId, idleTimeoutSeconds, state: carried, stepsPerRun = STEPS_PER_RUN }: FunnelWorkflowInput): Promise<FunnelOutcome> {
  const state: FunnelState = carried ?? { ideas: 0, generated: false };
  let steps = 0;
  let ended = false;
  let busy = false;
  let ideasQueued = 0;
  /** Set once the run has taken its steps: new ideas and setups wait for the next run (refused, retried by clients). */
  let draining = false;

  /** One step at a time, in arrival order. */
  async function exclusive<T>(step: () => Promise<T>): Promise<T> {
    await condition(() => !busy);
    busy = true;
    try {
      return await step();
    } finally {
      busy = false;
    }
  }

  const stillOpen = (): void => {
    if (ended) throw refuse('The session has ended', FUNNEL_REFUSALS.expired);
  };
  const beforeCard = (): void => {
    stillOpen();
    if (draining) throw refuse('The session is being compacted; try again in a moment', FUNNEL_REFUSALS.busy);
    if (state.generated) throw refuse('The card of this session has already been started', FUNNEL_REFUSALS.generated);
  };

  setHandler(FUNNEL_UPDATES.addIdea, async () => {
    steps++;
    ideasQueued++;
    try {
      return await exclusive(async () => {
        const idea = await writer.suggestFunnelIdea(funnelId, state.ideas + 1);
        state.ideas++;
        return idea;
      });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : err;
      // The provider's own words only; anything else (storage, database) may name internal paths.
      const said = cause instanceof ApplicationFailure && SHOWN_FAILURE_TYPES.includes(cause.type ?? '') ? `: ${cause.message}` : '';
      throw refuse(`The text provider could not suggest an idea${said}`, FUNNEL_REFUSALS.ideaFailed);
    } finally {
      ideasQueued--;
    }
  }, {
    validator: () => {
      beforeCard();
      if (state.ideas + ideasQueued >= MAX_FUNNEL_IDEAS) throw refuse(`The idea pool is full (${MAX_FUNNEL_IDEAS} ideas)`, FUNNEL_REFUSALS.ideaLimit);
    },
  });

  setHandler(FUNNEL_UPDATES.applySetup, async (setup: FunnelSetup): Promise<void> => {
    steps++;
    try {
      await exclusive(() => bookkeeping.recordFunnelSetup(funnelId, setup));
    } catch (err) {
      // A refusal of the activity (a generate claimed the card meanwhile) is the step's own refusal.
      const cause = err instanceof ActivityFailure ? err.cause : err;
      throw cause instanceof ApplicationFailure ? refuse(cause.message, cause.type ?? FUNNEL_REFUSALS.generated) : err;
    }
  }, { validator: (_setup: FunnelSetup) => beforeCard() });

  setHandler(FUNNEL_UPDATES.recordCard, async (_card: { actionId: number }): Promise<void> => {
    steps++;
    state.generated = true;
  }, { validator: (_card: { actionId: number }) => stillOpen() });

  for (;;) {
    const seen = steps;
    const stepped = await condition(() => steps !== seen, `${idleTimeoutSeconds} seconds`);
    if (!stepped) break;
    if (steps >= stepsPerRun) {
      draining = true; // no new ideas or setups can keep the run from ending
      await condition(allHandlersFinished);
      await continueAsNew<typeof funnelWorkflow>({ funnelId, idleTimeoutSeconds, state, stepsPerRun });
    }
  }
  ended = true; // validators refuse from here on
  await condition(allHandlersFinished);
  await bookkeeping.expireFunnel(funnelId);
  return { status: 'expired', ...state };
}
