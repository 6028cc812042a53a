/**
 * Every statement on `funnels`: a session's row made, read, its ideas and setup recorded, its card claimed, its end.
 * Each write is conditional, so an activity that runs again changes nothing. (`session.ts` holds the pure rules the
 * workflow imports too; this module does I/O and stays out of workflow code.)
 */
import type { DataSource, EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';
import { FUNNEL_COLUMNS, type FunnelIdea, type FunnelRow, type FunnelSetup } from './session';

/** A session by id (every column the API and the activities use), or undefined. */
export async function readFunnel(m: EntityManager, funnelId: number): Promise<FunnelRow | undefined> {
  const [row] = await m.query(
    `SELECT ${FUNNEL_COLUMNS}, (SELECT sandbox_of IS NOT NULL FROM accounts WHERE id = account_id) AS sandbox FROM funnels WHERE id = $1`, [funnelId]);
  return row;
}

/** A new session, in the transaction that makes its project; answers its id. */
export async function insertFunnel(m: EntityManager, funnel: {
  accountId: number; projectId: number; locale: string; inputs: string[]; product: object; questions: object[];
}): Promise<number> {
  const row = await sqlRow(m,
    `INSERT INTO funnels (account_id, project_id, locale, inputs, product, questions) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [funnel.accountId, funnel.projectId, funnel.locale, JSON.stringify(funnel.inputs), funnel.product, JSON.stringify(funnel.questions)]);
  return row!.id;
}

/** Appends the idea at `position` (1-based), unless the pool already has it (a run that did it first). */
export async function appendIdea(db: DataSource, funnelId: number, position: number, idea: FunnelIdea): Promise<void> {
  await db.query(
    `UPDATE funnels SET ideas = ideas || jsonb_build_array($2::jsonb), updated_at = now()
      WHERE id = $1 AND jsonb_array_length(ideas) = $3`, [funnelId, JSON.stringify(idea), position - 1]);
}

/** Records the setup of an open session; answers false when its card has already been started. */
export async function recordSetup(db: DataSource, funnelId: number, setup: FunnelSetup): Promise<boolean> {
  const [, changed] = await db.query(`UPDATE funnels SET setup = $2, updated_at = now() WHERE id = $1 AND status = 'open'`, [funnelId, setup]);
  return changed > 0;
}

/** Ends a session (idle, or never started): it answers GET only from now on. */
export async function expireFunnel(db: DataSource, funnelId: number): Promise<void> {
  await db.query(`UPDATE funnels SET status = 'expired', ended_at = now(), updated_at = now() WHERE id = $1 AND ended_at IS NULL`, [funnelId]);
}

/**
 * Claims the session's card for `actionId`, in the transaction that holds its price: only when no other generate
 * claimed it since `cardsStarted` was read and the session has not ended. Answers `claimed`, or why not.
 */
export async function claimFunnelCard(m: EntityManager, claim: {
  funnelId: number; actionId: number; answers: unknown; ideaId: string | null; cardsStarted: number;
}): Promise<'claimed' | 'expired' | 'taken'> {
  const [, claimed] = await m.query(
    `UPDATE funnels SET action_id = $2, answers = $3, chosen_idea_id = $4, cards_started = cards_started + 1, status = 'generated',
            updated_at = now()
      WHERE id = $1 AND cards_started = $5 AND status <> 'expired'`,
    [claim.funnelId, claim.actionId, claim.answers, claim.ideaId, claim.cardsStarted]);
  if (claimed > 0) return 'claimed';
  const [now] = await m.query('SELECT status FROM funnels WHERE id = $1', [claim.funnelId]);
  return now?.status === 'expired' ? 'expired' : 'taken';
}
