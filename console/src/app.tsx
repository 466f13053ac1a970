import { useEffect, useRef, useState } from 'preact/hooks';
import { loadSession, loadSettings, saveSession, setKey, verifyKey, type ConsoleSettings, type LedgerError, type Session } from './api';
import { EventsPage } from './pages/events';
import { OverviewPage } from './pages/overview';
import { ReturnsPage } from './pages/returns';
import { StatementPage } from './pages/statement';
import { TransactionsPage } from './pages/transactions';
import { TransfersPage } from './pages/transfers';
import { UsersPage } from './pages/users';
import { WebhooksPage } from './pages/webhooks';
import { useRoute, type Route } from './route';
import { ErrorBox, SettingsContext } from './ui';

const PAGES = [
  ['overview', 'Overview'],
  ['transactions', 'Transactions'],
  ['transfers', 'Transfers'],
  ['returns', 'ACH returns'],
  ['users', 'Users'],
  ['events', 'Events'],
  ['webhooks', 'Webhooks'],
  ['statement', 'Statement'],
] as const;

function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn: (session: Session) => void }) {
  const [key, setKeyText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<LedgerError | null>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await verifyKey(key.trim()));
    } catch (failure) {
      setError(failure as LedgerError);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin" id="main">
      <h1>Ledger console</h1>
      <p>Sign in with an API key of your organization. The key stays in this tab only and is forgotten when the tab closes.</p>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      <form onSubmit={(event) => void submit(event)}>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          placeholder="sk_sandbox_…"
          value={key}
          onInput={(event) => setKeyText(event.currentTarget.value)}
        />
        <button type="submit" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
      </form>
      {error && <ErrorBox error={error} />}
    </main>
  );
}

function Page({ route }: { route: Route }) {
  const [page = 'overview', id] = route.path;
  switch (page) {
    case 'transactions':
      return <TransactionsPage id={id} query={route.query} />;
    case 'transfers':
      return <TransfersPage id={id} query={route.query} />;
    case 'returns':
      return <ReturnsPage query={route.query} />;
    case 'users':
      return <UsersPage id={id} query={route.query} />;
    case 'events':
      return <EventsPage id={id} query={route.query} />;
    case 'webhooks':
      return <WebhooksPage id={id} />;
    case 'statement':
      return <StatementPage query={route.query} />;
    default:
      return <OverviewPage />;
  }
}

export function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const [notice, setNotice] = useState<string | null>(null);
  const [settings, setSettings] = useState<ConsoleSettings | null>(null);
  const route = useRoute();
  const main = useRef<HTMLElement>(null);
  const signOut = (message: string | null) => {
    saveSession(null);
    setSession(null);
    setNotice(message);
  };
  setKey(session?.apiKey ?? null, (error) =>
    signOut(`Signed out: the API refused the key (${error.message}${error.requestId ? `, request id ${error.requestId}` : ''}).`),
  );
  useEffect(() => {
    loadSettings().then(setSettings, () => setSettings(null));
  }, []);
  const pageName = route.path[0] ?? 'overview';
  useEffect(() => {
    const title = PAGES.find(([name]) => name === pageName)?.[1] ?? 'Overview';
    document.title = `${title} · Ledger console`;
  }, [pageName]);
  if (session === null) {
    return (
      <SignIn
        notice={notice}
        onSignedIn={(fresh) => {
          saveSession(fresh);
          setNotice(null);
          setSession(fresh);
        }}
      />
    );
  }
  return (
    <SettingsContext.Provider value={settings}>
      <a class="skip" href="#main" onClick={(event) => (event.preventDefault(), main.current?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <div class="brand">
          <strong>Ledger console</strong>
          <span class="org">{session.organizationName}</span>
          <span class={`badge badge-env-${session.environment}`}>{session.environment}</span>
        </div>
        <nav aria-label="Pages">
          <ul>
            {PAGES.map(([name, title]) => (
              <li key={name}>
                <a href={`#/${name}`} aria-current={pageName === name ? 'page' : undefined}>
                  {title}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="signout" onClick={() => signOut('Signed out.')}>
          Sign out
        </button>
      </header>
      <main id="main" ref={main} tabIndex={-1}>
        <Page route={route} />
      </main>
    </SettingsContext.Provider>
  );
}
