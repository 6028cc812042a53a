/**
 * Where a generation lands: the caller's own `project_id`, else the key's `default_grouping` (one inbox project
 * per key, or a new project per request).
 */
import type { EntityManager } from 'typeorm';
import { sqlRow } from '../src/db/sql';
import { Project } from '../src/db/entities';
import { requireOwn } from './ownership';
import type { Caller } from './services';

export interface ProjectHints { name: string | null; productName: string | null; categoryId: string | null; conceptId: string | null }

export async function resolveProject(m: EntityManager, caller: Caller, projectId: number | undefined, hints: ProjectHints): Promise<number> {
  if (projectId !== undefined) {
    await requireOwn(m, Project, projectId, caller, 'Project');
    return projectId;
  }
  if (caller.defaultGrouping === 'api_key_inbox') {
    const created = await sqlRow(m,
      `INSERT INTO projects (account_id, name, source, inbox_key_id) VALUES ($1, $2, 'api_inbox', $3)
       ON CONFLICT (inbox_key_id) WHERE inbox_key_id IS NOT NULL DO NOTHING RETURNING id`,
      [caller.accountId, caller.keyName, caller.keyId]);
    if (created) return created.id;
    return (await sqlRow(m, 'SELECT id FROM projects WHERE inbox_key_id = $1', [caller.keyId]))!.id;
  }
  const project = await sqlRow(m,
    `INSERT INTO projects (account_id, name, product_name, category_id, concept_id, source)
     VALUES ($1, $2, $3, $4, $5, 'api') RETURNING id`,
    [caller.accountId, hints.name, hints.productName, hints.categoryId, hints.conceptId]);
  return project!.id;
}
