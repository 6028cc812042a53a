/** Overview: the account's sparks (balance, available, held). */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api';
import { ErrorNote, messageOf } from './parts';

interface Overview { balance: number; available: number; held: number }

export function OverviewPage() {
  const [overview, setOverview] = useState<Overview>();
  const [error, setError] = useState<string>();
  useEffect(() => {
    api<Overview>('GET', '/overview').then(setOverview, (err) => setError(messageOf(err)));
  }, []);
  return (
    <section>
      <h1>Overview</h1>
      <ErrorNote message={error} />
      {overview && (
        <dl class="figures">
          <div class="card"><dt>Balance</dt><dd>{overview.balance}</dd></div>
          <div class="card"><dt>Available</dt><dd>{overview.available}</dd></div>
          <div class="card"><dt>Held</dt><dd>{overview.held}</dd></div>
        </dl>
      )}
    </section>
  );
}
