/**
 * The funnel session's side effects: ask the text provider for an idea, record the setup, end the session. Each is
 * safe to run again: an idea is appended at its position only once, the others are plain conditional writes.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { FunnelIdea, FUNNEL_REFUSALS, FunnelRow, FunnelSetup, ideaId } from '../src/funnels/session';
import * as funnels from '../src/funnels/store';
import { ProviderError } from '../src/providers/provider';
import { FAILURE_TYPES } from '../src/temporal/contract';
import type { ActivityDeps } from './deps';

export function createFunnelActivities({ db, store, providers }: ActivityDeps) {
  async function readFunnel(funnelId: number): Promise<FunnelRow> {
    const row = await funnels.readFunnel(db.manager, funnelId);
    if (!row) throw ApplicationFailure.nonRetryable(`Funnel ${funnelId} does not exist`, FAILURE_TYPES.invalidInput);
    return row;
  }

  return {
    /** The idea at `position` in the pool: asked of the provider and appended, unless a first run already did. */
    async suggestFunnelIdea(funnelId: number, position: number): Promise<FunnelIdea> {
      const funnel = await readFunnel(funnelId);
      if (funnel.ideas.length >= position) return funnel.ideas[position - 1];
      let idea;
      try {
        idea = await (funnel.sandbox ? providers.sandbox : providers.text).suggestIdea({
          images: await Promise.all(funnel.inputs.map((key) => store.read(key))),
          productName: funnel.product.product_name, categoryId: funnel.product.category_id, qualities: funnel.product.qualities,
          locale: funnel.locale, existingTitles: funnel.ideas.map((i) => i.title),
        });
      } catch (err) {
        if (!(err instanceof ProviderError)) throw err;
        throw ApplicationFailure.create({
          type: err.retryable ? FAILURE_TYPES.providerUnavailable : FAILURE_TYPES.providerRefused,
          message: err.message, nonRetryable: !err.retryable, details: [{ code: err.code }],
        });
      }
      if (funnel.ideas.some((i) => i.title.trim().toLowerCase() === idea.title.trim().toLowerCase())) {
        throw ApplicationFailure.nonRetryable(`The text provider repeated an idea already in the pool: ${idea.title}`, FAILURE_TYPES.providerRefused);
      }
      const stored: FunnelIdea = { id: ideaId(position), ...idea };
      await funnels.appendIdea(db, funnelId, position, stored);
      return (await readFunnel(funnelId)).ideas[position - 1];
    },

    /** Replaces the setup while the session is open; a session whose card started refuses it. */
    async recordFunnelSetup(funnelId: number, setup: FunnelSetup): Promise<void> {
      if (!(await funnels.recordSetup(db, funnelId, setup))) throw ApplicationFailure.nonRetryable('The card of this session has already been started', FUNNEL_REFUSALS.generated);
    },

    /** The session ended idle: it keeps answering GET (its card included) and refuses every step. */
    async expireFunnel(funnelId: number): Promise<void> {
      await funnels.expireFunnel(db, funnelId);
    },
  };
}
