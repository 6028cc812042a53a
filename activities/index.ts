import { createActionLifecycleActivities } from './action-lifecycle';
import type { ActivityDeps } from './deps';
import { createGenerateAssetActivities } from './render';
import { createWebhookDeliveryActivities } from './webhook-delivery';
import { createJobLifecycleActivities } from './job-lifecycle';
import { createFunnelActivities } from './funnel';
import { createHousekeepingActivities } from './housekeeping';
import { createBatchActivities } from './batch';

export type { ActivityDeps } from './deps';

/** Every activity the worker registers, built from its dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createActionLifecycleActivities(deps),
    ...createGenerateAssetActivities(deps),
    ...createWebhookDeliveryActivities(deps),
    ...createJobLifecycleActivities(deps),
    ...createFunnelActivities(deps),
    ...createHousekeepingActivities(deps),
    ...createBatchActivities(deps),
  };
}

export type Activities = ReturnType<typeof createActivities>;
