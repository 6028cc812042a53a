/**
 * Projects and cards: Project > Card > Action. Lists hide v2 projects unless `source=all`.
 */
import { In } from 'typeorm';
import { moveCardToProject } from '../../src/actions/lifecycle';
import { contentsOfProject, versionsOfCard } from '../../src/actions/store';
import { Card, Project } from '../../src/db/entities';
import { badRequest } from '../../src/errors';
import { requireOwn } from '../../src/accounts/ownership';
import { actionSummaryView, cardActionView, cardView, projectView } from '../representations';
import type { Route } from '../route';
import { ref } from '../schemas/shared';
import type { ApiServices } from '../services';
import type { Caller } from '../../src/services';
import { categoryOfConcept } from '../../src/generation/catalogue';

const projectFields = {
  name: { type: 'string', maxLength: 200 },
  product_name: { type: 'string', maxLength: 200 },
  category_id: ref('CategoryId'),
  concept_id: { type: 'string', maxLength: 100 },
  comment: { type: 'string', maxLength: 5000 },
};
const projectBody = { type: 'object', properties: projectFields } as const;
const idPath = (name: string) => ({
  type: 'object', required: [name], properties: { [name]: { type: 'integer', minimum: 1, maximum: 2147483647 } },
});

interface ProjectBody { name?: string; product_name?: string; category_id?: string; concept_id?: string; comment?: string }

/** A catalogue concept must belong to the project's category; free-form concepts (e.g. `infographic`) pass. */
function checkConcept(categoryId: string | null | undefined, conceptId: string | null | undefined): void {
  if (!categoryId || !conceptId) return;
  const owner = categoryOfConcept(conceptId);
  if (owner && owner.id !== categoryId) throw badRequest(`concept_id "${conceptId}" does not belong to category "${categoryId}"`);
}

function applyBody(project: Project, body: ProjectBody): void {
  if (body.name !== undefined) project.name = body.name;
  if (body.product_name !== undefined) project.productName = body.product_name;
  if (body.category_id !== undefined) project.categoryId = body.category_id;
  if (body.concept_id !== undefined) project.conceptId = body.concept_id;
  if (body.comment !== undefined) project.comment = body.comment;
}

export function projectRoutes({ db, signer }: ApiServices): Route[] {
  return [
    {
      method: 'post', path: '/projects', operationId: 'createProject', tag: 'Projects and cards', summary: 'Create a project',
      body: projectBody,
      responses: { 201: { description: 'The new project', schema: ref('Project') } },
      async handle(ctx, { body = {} }: { body?: ProjectBody }) {
        const caller = ctx.state.caller as Caller;
        checkConcept(body.category_id, body.concept_id);
        const project = db.manager.create(Project, {
          accountId: caller.accountId, source: 'api', inboxKeyId: null,
          name: null, productName: null, categoryId: null, conceptId: null, comment: null,
        });
        applyBody(project, body);
        ctx.status = 201;
        ctx.body = projectView(await db.manager.save(project));
      },
    },
    {
      method: 'get', path: '/projects', operationId: 'listProjects', tag: 'Projects and cards', summary: 'List projects, newest first',
      query: {
        type: 'object',
        properties: {
          limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
          offset: { type: 'integer', minimum: 0, maximum: 2147483647, default: 0 },
          source: { type: 'string', enum: ['api', 'api_inbox', 'all'], description: 'Default: api and api_inbox' },
        },
      },
      responses: {
        200: {
          description: 'A page of projects',
          schema: {
            type: 'object', required: ['items', 'total', 'limit', 'offset'],
            properties: { items: { type: 'array', items: ref('Project') }, total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' } },
          },
        },
      },
      async handle(ctx, { query }) {
        const caller = ctx.state.caller as Caller;
        const sources = query.source === 'all' ? ['api', 'api_inbox', 'api_v2'] : query.source ? [query.source] : ['api', 'api_inbox'];
        const [items, total] = await db.manager.findAndCount(Project, {
          where: { accountId: caller.accountId, source: In(sources) },
          order: { createdAt: 'DESC', id: 'DESC' }, take: query.limit, skip: query.offset, // newest first (ids are not in time order)
        });
        ctx.body = { items: items.map(projectView), total, limit: query.limit, offset: query.offset };
      },
    },
    {
      method: 'get', path: '/projects/{project_id}', operationId: 'getProject', tag: 'Projects and cards', summary: 'A project with its cards and actions',
      params: idPath('project_id'),
      responses: {
        200: {
          description: 'The project',
          schema: {
            allOf: [ref('Project'), {
              type: 'object', required: ['cards', 'actions'],
              properties: { cards: { type: 'array', items: ref('Card') }, actions: { type: 'array', items: ref('ActionSummary') } },
            }],
          },
        },
      },
      async handle(ctx, { params }) {
        const project = await requireOwn(db.manager, Project, params.project_id, ctx.state.caller, 'Project');
        const { cards, actions } = await contentsOfProject(db.manager, project.id);
        ctx.body = { ...projectView(project), cards: cards.map(cardView), actions: actions.map((a) => actionSummaryView(a, signer)) };
      },
    },
    {
      method: 'patch', path: '/projects/{project_id}', operationId: 'updateProject', tag: 'Projects and cards', summary: 'Change project fields; unset fields stay',
      params: idPath('project_id'),
      body: projectBody,
      responses: { 200: { description: 'The project', schema: ref('Project') } },
      async handle(ctx, { params, body = {} }: { params: { project_id: number }; body?: ProjectBody }) {
        const project = await requireOwn(db.manager, Project, params.project_id, ctx.state.caller, 'Project');
        applyBody(project, body);
        checkConcept(project.categoryId, project.conceptId);
        ctx.body = projectView(await db.manager.save(project));
      },
    },
    {
      method: 'get', path: '/cards/{card_id}', operationId: 'getCard', tag: 'Projects and cards', summary: 'A card with all its versions',
      params: idPath('card_id'),
      responses: {
        200: {
          description: 'The card',
          schema: {
            allOf: [ref('Card'), {
              type: 'object', required: ['actions'],
              properties: {
                actions: {
                  type: 'array',
                  items: {
                    type: 'object', required: ['id', 'type', 'status', 'depth'],
                    properties: {
                      id: { type: 'integer' }, type: { type: 'string' }, status: { type: 'string' }, depth: { type: 'integer' },
                      parent_action_id: { type: ['integer', 'null'] }, asset_path: { type: ['string', 'null'] },
                    },
                  },
                },
              },
            }],
          },
        },
      },
      async handle(ctx, { params }) {
        const card = await requireOwn(db.manager, Card, params.card_id, ctx.state.caller, 'Card');
        const actions = await versionsOfCard(db.manager, card.id);
        ctx.body = { ...cardView(card), actions: actions.map(cardActionView) };
      },
    },
    {
      method: 'patch', path: '/cards/{card_id}', operationId: 'moveCard', tag: 'Projects and cards', summary: 'Move a card into another project of the caller',
      params: idPath('card_id'),
      body: { type: 'object', required: ['project_id'], properties: { project_id: { type: 'integer', minimum: 1, maximum: 2147483647 } } },
      responses: { 200: { description: 'The card with its new project_id', schema: ref('Card') } },
      async handle(ctx, { params, body }) {
        const caller = ctx.state.caller as Caller;
        const moved = await db.transaction(async (m) => {
          const card = await requireOwn(m, Card, params.card_id, caller, 'Card');
          await requireOwn(m, Project, body.project_id, caller, 'Project');
          await moveCardToProject(m, card.id, body.project_id);
          return m.findOneByOrFail(Card, { id: card.id });
        });
        ctx.body = cardView(moved);
      },
    },
  ];
}
