/**
 * Where a generation lands: the caller's own `project_id`, else the key's `default_grouping` (one inbox project
 * per key, or a new project per request).
 */
import type { DataSource, EntityManager } from 'typeorm';
import type { CompoundStatement } from '../db/statement';
import { idBlocks } from '../db/id-blocks';
import { sqlRow } from '../db/sql';
import { Project } from '../db/entities';
import { requireOwn } from '../accounts/ownership';
import type { Caller } from '../services';

export interface ProjectHints { name: string | null; productName: string | null; categoryId: string | null; conceptId: string | null }

/** Where the card of an accepted action goes: a project that exists (checked as the caller's), or a new one. */
export type ProjectChoice = { kind: 'existing'; id: number } | { kind: 'new'; id: number; hints: ProjectHints; source: 'api' | 'api_v2' };

/**
 * The project of a new card, decided before the statement that accepts it: the caller's `project_id` (403 or 404
 * unless it is theirs), the key's inbox, or a new project (`ownProject`, for v2 jobs, always; `legacy_per_request`
 * keys without a project_id), whose id is taken ahead from its sequence.
 */
export async function chooseProject(
  db: DataSource, caller: Caller, projectId: number | undefined, hints: ProjectHints, ownProject?: 'api_v2',
): Promise<ProjectChoice> {
  if (ownProject) return { kind: 'new', id: await idBlocks(db).next('projects'), hints, source: ownProject };
  if (projectId !== undefined) {
    await requireOwn(db.manager, Project, projectId, caller, 'Project');
    return { kind: 'existing', id: projectId };
  }
  if (caller.defaultGrouping === 'api_key_inbox') return { kind: 'existing', id: await inboxOf(db, caller) };
  return { kind: 'new', id: await idBlocks(db).next('projects'), hints, source: 'api' };
}

/**
 * The `project` part of the accept statement (src/db/statement.ts): one row, the project's `id`. A new project is
 * written only when the key was `claimed` (a repeat makes none).
 */
export function projectPart(statement: CompoundStatement, caller: Pick<Caller, 'accountId'>, choice: ProjectChoice): string {
  const p = (value: unknown) => statement.param(value);
  if (choice.kind === 'existing') return `SELECT ${p(choice.id)}::int AS id`;
  const { hints } = choice;
  return `INSERT INTO projects (id, account_id, name, product_name, category_id, concept_id, source)
    SELECT ${p(choice.id)}, ${p(caller.accountId)}, ${p(hints.name)}, ${p(hints.productName)}, ${p(hints.categoryId)}, ${p(hints.conceptId)}, ${p(choice.source)}
      FROM claimed RETURNING id`;
}

/** The inbox projects of keys this process has seen, per database (an inbox is never deleted nor given to another key). */
const inboxesOf = new WeakMap<DataSource, Map<number, number>>();
const MAX_INBOXES = 10_000;

/**
 * The key's inbox project: made by its first request, looked up once per process after that. A concurrent first
 * request may make it in between: then the one it made is read.
 */
async function inboxOf(db: DataSource, caller: Caller): Promise<number> {
  let inboxes = inboxesOf.get(db);
  if (!inboxes) inboxesOf.set(db, (inboxes = new Map()));
  const known = inboxes.get(caller.keyId);
  if (known !== undefined) return known;
  const inbox = async () => (await sqlRow(db.manager, 'SELECT id FROM projects WHERE inbox_key_id = $1', [caller.keyId]))?.id as number | undefined;
  let id = await inbox();
  if (id === undefined) {
    const created = await sqlRow(db.manager,
      `INSERT INTO projects (account_id, name, source, inbox_key_id) VALUES ($1, $2, 'api_inbox', $3)
       ON CONFLICT (inbox_key_id) WHERE inbox_key_id IS NOT NULL DO NOTHING RETURNING id`,
      [caller.accountId, caller.keyName, caller.keyId]);
    id = created ? (created.id as number) : (await inbox())!;
  }
  if (inboxes.size >= MAX_INBOXES) inboxes.clear();
  inboxes.set(caller.keyId, id);
  return id;
}

/** A new project of the caller, named by the hints (also the own project of a funnel session). */
export async function insertProject(m: EntityManager, caller: Caller, hints: ProjectHints, source: 'api' | 'api_v2'): Promise<number> {
  const project = await sqlRow(m,
    `INSERT INTO projects (account_id, name, product_name, category_id, concept_id, source)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [caller.accountId, hints.name, hints.productName, hints.categoryId, hints.conceptId, source]);
  return project!.id;
}
