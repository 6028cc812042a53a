/**
 * Read-model moves of an action, each with its spark settlement in one transaction (`src/actions/lifecycle.ts`
 * owns the statements and their lock order). Activities run at least once, so every move is a conditional update:
 * repeating it changes nothing. Given a v2 job's id, each also moves the job in the same transaction (the job
 * workflow runs them as local activities: one step, not two).
 */
import {
  type ActionEnd, cancelRendered, type CompleteOutcome, completeRendered, endUnrendered, failRendered, type JobFailure, type StartOutcome,
  startWithJob,
} from '../src/actions/lifecycle';
import { finishJobPostprocessing } from '../src/jobs/lifecycle';
import { type DeliveryPlan, planDeliveries } from '../src/webhooks/store';
import type { ActivityDeps } from './deps';

export function createActionLifecycleActivities({ db, webhookRetryInitialMs }: ActivityDeps) {
  return {
    /**
     * pending -> processing (and the job, if given, to claimed/routing). Answers `cancelled` (stop) when the action
     * was cancelled or is already closed, or its job already ended.
     */
    async startProcessing(actionId: number, jobId?: string): Promise<StartOutcome> {
      // One statement, its own transaction: the action's start, with its job's move when it has one.
      return startWithJob(db.manager, actionId, jobId);
    },

    /**
     * Charges the hold and marks the action completed, atomically; the card's active version moves to it, and the
     * job, if given, to succeeded/postprocessing.
     */
    async completeAction(actionId: number, assetPath: string, jobId?: string): Promise<CompleteOutcome> {
      // One statement, its own transaction: the charge and the completion, with its job's move when it has one.
      return completeRendered(db.manager, actionId, assetPath, jobId);
    },

    /**
     * completeAction, then the deliveries of its outcome planned (as `planDeliveries`): one step of the v1 action
     * workflow since the `outcome-plans` patch. A completion that found the action cancelled plans nothing.
     */
    async completeAndPlanDeliveries(actionId: number, assetPath: string): Promise<{ outcome: CompleteOutcome; plan?: DeliveryPlan }> {
      const outcome = await completeRendered(db.manager, actionId, assetPath);
      return outcome === 'completed' ? { outcome, plan: await planDeliveries(db, actionId, 'completed', webhookRetryInitialMs) } : { outcome };
    },

    /**
     * A v2 job's last step since `lean-job`: completeAction with its job (charged, `succeeded`/`postprocessing`), then
     * its deliveries planned and, when none is, the job finished (`completed`): three statements.
     */
    async completeJob(actionId: number, assetPath: string, jobId: string): Promise<{ outcome: CompleteOutcome; plan?: DeliveryPlan }> {
      const outcome = await completeRendered(db.manager, actionId, assetPath, jobId);
      if (outcome === 'cancelled') return { outcome };
      const plan = await planDeliveries(db, actionId, 'completed', webhookRetryInitialMs);
      if (plan.deliveries.length === 0) await finishJobPostprocessing(db.manager, jobId);
      return { outcome, plan };
    },

    /** failAction, then the deliveries of the failure planned: one step of the v1 action workflow since `outcome-plans`. */
    async failAndPlanDeliveries(actionId: number, errorMessage: string): Promise<DeliveryPlan> {
      await db.transaction((m) => failRendered(m, actionId, errorMessage));
      return planDeliveries(db, actionId, 'failed', webhookRetryInitialMs);
    },

    /** Releases the hold and marks the action cancelled (a cancel that reached a running render). */
    async cancelAction(actionId: number): Promise<'cancelled'> {
      await db.transaction((m) => cancelRendered(m, actionId));
      return 'cancelled';
    },

    /**
     * Releases the hold and marks the action failed with a message the integrator may read; the job, if given,
     * ends as `job.status` with the same message.
     */
    async failAction(actionId: number, errorMessage: string, job?: JobFailure): Promise<void> {
      await db.transaction((m) => failRendered(m, actionId, errorMessage, job));
    },

    /**
     * Ends an action whose render (`renderAction`) failed or was cancelled: releases the hold and closes the action
     * as `ending` says, unless the render completed and charged it first (a cancel that raced its last step).
     * Answers how the action really ended, so that the workflow reports and announces that.
     */
    async endAction(actionId: number, ending: { status: 'failed'; error: string } | { status: 'cancelled' }): Promise<ActionEnd> {
      return db.transaction((m) => endUnrendered(m, actionId, ending));
    },
  };
}
