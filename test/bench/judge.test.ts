/** The targets of issue 24 as the report judges them, on figures made up for the purpose. */
import assert from 'node:assert/strict';
import type { Figures } from '../../bench/measured';
import { inTurn } from '../../bench/load';
import { backendReport } from '../../bench/report';
import { settingsFor } from '../../bench/settings';

const load = (perSecond: number, max: number) => ({ values: [perSecond], p50: [max / 3], p99: [max * 0.9], max: [max], failed: 0 });

/** `npm start`'s accept target, judged on bare starts of 100/s and the given saturated and paced runs. */
function allModeTarget(extra: Figures) {
  const figures: Figures = { 'floor.starts': load(100, 600), 'svc.post_all_paced_offered': { values: [50], p50: [], p99: [], max: [], failed: 0 }, ...extra };
  const report = backendReport('dev', figures, settingsFor('smoke'), []);
  return report.targets.find((t) => t.figure.includes('`all` mode (npm start), zero-cost renders'))!;
}

describe('benchmark targets (bench/report.ts judge)', () => {
  it('judges npm start\'s slowest request in the open loop at its rate, not under the saturating closed loop', () => {
    // Saturated: 60/s over 50 connections, so its slowest request waits well over a second (Little's law).
    const pass = allModeTarget({ 'svc.post_all': load(60, 1900), 'svc.post_all_paced': load(50, 700) });
    assert.equal(pass.pass, true, pass.observed);
    assert.match(pass.observed, /slowest there 1900\.00 ms.*at 50\.00\/s offered, 0 failed, slowest request 700\.00 ms/);
  });

  it('fails when the open loop has a request over a second or one not answered 2xx, or the saturated ratio is short', () => {
    assert.equal(allModeTarget({ 'svc.post_all': load(60, 1900), 'svc.post_all_paced': load(50, 1001) }).pass, false);
    assert.equal(allModeTarget({ 'svc.post_all': load(60, 1900), 'svc.post_all_paced': { ...load(49.9, 700), failed: 1 } }).pass, false, 'one request failed');
    assert.equal(allModeTarget({ 'svc.post_all': load(45, 900), 'svc.post_all_paced': load(50, 700) }).pass, false, 'under 0.5 of bare starts');
    const noneAnswered = { values: [0], p50: [NaN], p99: [NaN], max: [NaN], failed: 500 };
    assert.equal(allModeTarget({ 'svc.post_all': load(60, 900), 'svc.post_all_paced': noneAnswered }).pass, false, 'every request failed');
  });

  it('says "not measured" without an open-loop run', () => {
    assert.equal(allModeTarget({ 'svc.post_all': load(60, 900) }).pass, null);
  });
});

describe('measurements in turn (bench/load.ts inTurn)', () => {
  it('takes every measurement once a repetition, each first in turn and after each other equally often', () => {
    const items = ['floor', 'jobs', 'webhooks'];
    const orders = [0, 1, 2, 3, 4, 5].map((r) => inTurn(items, r));
    assert.deepEqual(orders, [
      ['floor', 'jobs', 'webhooks'], ['jobs', 'webhooks', 'floor'], ['webhooks', 'floor', 'jobs'],
      ['webhooks', 'jobs', 'floor'], ['floor', 'webhooks', 'jobs'], ['jobs', 'floor', 'webhooks'],
    ]);
    const follows = new Map<string, number>();
    for (const order of orders) order.slice(1).forEach((item, i) => follows.set(`${order[i]}>${item}`, (follows.get(`${order[i]}>${item}`) ?? 0) + 1));
    assert.deepEqual([...follows.values()], [2, 2, 2, 2, 2, 2], JSON.stringify([...follows]));
    assert.deepEqual(items, ['floor', 'jobs', 'webhooks'], 'the list itself is left as it was');
    assert.deepEqual([0, 1, 2, 3].map((r) => inTurn(['small', 'large'], r)), [['small', 'large'], ['large', 'small'], ['large', 'small'], ['small', 'large']]);
  });
});
