/**
 * The dashboard: signed out, the sign-in page (or the page of a one-time link); signed in, the pages of the account
 * behind a header with the navigation. Every page is a component of pages/.
 */
import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { api, ApiError, forgetSession, type Session, SIGNED_OUT } from './api';
import { BASE } from './paths';
import { AccountPage } from './pages/account';
import { ActionPage } from './pages/action';
import { BillingPage } from './pages/billing';
import { GalleryPage } from './pages/gallery';
import { BatchesPage } from './pages/batches';
import { KeysPage } from './pages/keys';
import { LinkPage } from './pages/link';
import { MembersPage } from './pages/members';
import { OverviewPage } from './pages/overview';
import { SignInPage } from './pages/sign-in';
import { TryPage } from './pages/try';
import { WebhooksPage } from './pages/webhooks';


export function App() {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [link] = useState(() => /^#link=([A-Za-z0-9_-]{43})$/.exec(location.hash)?.[1]);

  useEffect(() => {
    const signedOut = () => { forgetSession(); setSession(null); };
    window.addEventListener(SIGNED_OUT, signedOut);
    return () => window.removeEventListener(SIGNED_OUT, signedOut);
  }, []);

  useEffect(() => {
    if (link) {
      history.replaceState(null, '', `${BASE}/`); // the token leaves the address bar (and the history) at once
      return;
    }
    api<Session>('GET', '/session').then(setSession, (err) => {
      if (err instanceof ApiError && err.status === 401) setSession(null);
      else throw err;
    });
  }, []);

  if (link && session === undefined) return <LinkPage token={link} onSignedIn={setSession} />;
  if (session === undefined) return <main class="centered" aria-busy="true"><p>Loading…</p></main>;
  if (session === null) return <SignInPage onSignedIn={setSession} />;
  const signOut = async () => {
    await api('POST', '/sign-out').catch(() => undefined);
    forgetSession();
    setSession(null);
  };
  return (
    <LocationProvider>
      <Shell session={session} onSignOut={signOut}>
        <Router>
          <Route path={`${BASE}/`} component={OverviewPage} />
          <Route path={`${BASE}/gallery`} component={GalleryPage} />
          <Route path={`${BASE}/batches`} component={BatchesPage} />
          <Route path={`${BASE}/try`} component={TryPage} />
          <Route path={`${BASE}/actions/:id`} component={({ id }: { id: string }) => <ActionPage id={id} />} />
          <Route path={`${BASE}/keys`} component={() => <KeysPage owner={session.user.role === 'owner'} />} />
          <Route path={`${BASE}/webhooks`} component={WebhooksPage} />
          <Route path={`${BASE}/billing`} component={BillingPage} />
          <Route path={`${BASE}/members`} component={() => <MembersPage self={session.user} />} />
          <Route path={`${BASE}/account`} component={() => <AccountPage onSession={setSession} onSignedOut={() => { forgetSession(); setSession(null); }} />} />
          <Route default component={OverviewPage} />
        </Router>
      </Shell>
    </LocationProvider>
  );
}

function Shell({ session, onSignOut, children }: { session: Session; onSignOut: () => void; children: preact.ComponentChildren }) {
  const { path } = useLocation();
  const pages: [string, string][] = [[`${BASE}/`, 'Overview'], [`${BASE}/gallery`, 'Gallery'], [`${BASE}/batches`, 'Batches'], [`${BASE}/try`, 'Try it'], [`${BASE}/keys`, 'API keys'], [`${BASE}/webhooks`, 'Webhooks'], [`${BASE}/billing`, 'Billing']];
  if (session.user.role === 'owner') pages.push([`${BASE}/members`, 'Members']);
  pages.push([`${BASE}/account`, 'Account']);
  return (
    <>
      <header class="top">
        <a class="brand" href={`${BASE}/`}>Product imagery</a>
        <nav aria-label="Dashboard">
          {pages.map(([href, label]) => <a key={href} href={href} aria-current={path === href ? 'page' : undefined}>{label}</a>)}
        </nav>
        <div class="who">
          <span class="email">{session.user.email}</span>
          <button type="button" class="link" onClick={onSignOut}>Sign out</button>
        </div>
      </header>
      <main>{children}</main>
    </>
  );
}
