import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Why: the purge of stored inputs asks, for each old file, whether any action's params still name it
 * (`params @? '$.** ? (@ == "inputs/...")'`); a GIN index answers that without reading every action.
 */
export class ActionParamsIndex1732300000006 implements MigrationInterface {
  name = 'ActionParamsIndex1732300000006';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX actions_params ON actions USING gin (params)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX actions_params`);
  }
}
