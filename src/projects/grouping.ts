/**
 * Where a generation lands: the caller's own `project_id`, else the key's `default_grouping` (one inbox project
 * per key, or a new project per request).
 */
import type { EntityManager } from 'typeorm';
import { sqlRow } from '../db/sql';
import { Project } from '../db/entities';
import { requireOwn } from '../accounts/ownership';
import type { Caller } from '../services';

export interface ProjectHints { name: string | null; productName: string | null; categoryId: string | null; conceptId: string | null }

/**
 * The project of a new card. `ownProject` (v2 jobs) always makes a new project of source `api_v2`; project_id and
 * the inbox do not apply then.
 */
export async function resolveProject(
  m: EntityManager, caller: Caller, projectId: number | undefined, hints: ProjectHints, ownProject?: 'api_v2',
): Promise<number> {
  if (ownProject) return insertProject(m, caller, hints, ownProject);
  if (projectId !== undefined) {
    await requireOwn(m, Project, projectId, caller, 'Project');
    return projectId;
  }
  if (caller.defaultGrouping === 'api_key_inbox') {
    // The key's inbox exists after its first request: look first, create only when missing (a concurrent first
    // request may create it in between: then read the one it made).
    const inbox = async () => (await sqlRow(m, 'SELECT id FROM projects WHERE inbox_key_id = $1', [caller.keyId]))?.id as number | undefined;
    const existing = await inbox();
    if (existing !== undefined) return existing;
    const created = await sqlRow(m,
      `INSERT INTO projects (account_id, name, source, inbox_key_id) VALUES ($1, $2, 'api_inbox', $3)
       ON CONFLICT (inbox_key_id) WHERE inbox_key_id IS NOT NULL DO NOTHING RETURNING id`,
      [caller.accountId, caller.keyName, caller.keyId]);
    return created ? created.id : (await inbox())!;
  }
  return insertProject(m, caller, hints, 'api');
}

/** A new project of the caller, named by the hints (also the own project of a funnel session). */
export async function insertProject(m: EntityManager, caller: Caller, hints: ProjectHints, source: 'api' | 'api_v2'): Promise<number> {
  const project = await sqlRow(m,
    `INSERT INTO projects (account_id, name, product_name, category_id, concept_id, source)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
    [caller.accountId, hints.name, hints.productName, hints.categoryId, hints.conceptId, source]);
  return project!.id;
}
