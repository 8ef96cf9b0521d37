// A real OpenID provider (oidc-provider, certified) for the single sign-on tests.
//
// Environment: PORT (loopback port), ISSUER (default http://127.0.0.1:PORT),
// JWKS_FILE (the signing keys, a JWKS JSON: two providers may share them),
// REDIRECT_URIS (space-separated callback URLs of the dashboard under test).
// Accounts: alice (groups team-a), bob (groups team-b), mallory (no groups); the
// development sign-in form accepts any password. Clients: "dashboard" (the dashboard),
// "other" (another application: its ID tokens name another audience) and "short"
// (ID tokens valid for one second). Prints "ready <issuer>" once listening.
import { readFileSync } from 'node:fs';
import Provider from 'oidc-provider';

const port = Number(process.env.PORT);
const issuer = process.env.ISSUER || `http://127.0.0.1:${port}`;
const jwks = JSON.parse(readFileSync(process.env.JWKS_FILE, 'utf8'));
const redirectUris = (process.env.REDIRECT_URIS || '').split(' ').filter(Boolean);

const ACCOUNTS = {
  alice: { groups: ['team-a'], email: 'alice@example.test' },
  bob: { groups: ['team-b'], email: 'bob@example.test' },
  mallory: { groups: [], email: 'mallory@example.test' },
};

const client = (id) => ({
  client_id: id,
  client_secret: `${id}-secret`,
  redirect_uris: redirectUris,
  grant_types: ['authorization_code'],
  response_types: ['code'],
  token_endpoint_auth_method: 'client_secret_post',
});

const provider = new Provider(issuer, {
  clients: [client('dashboard'), client('other'), client('short')],
  jwks,
  pkce: { required: () => true },
  scopes: ['openid', 'profile', 'email', 'groups'],
  claims: {
    openid: ['sub'],
    profile: ['preferred_username', 'name'],
    email: ['email'],
    groups: ['groups'],
  },
  ttl: {
    IdToken: (ctx, token, c) => (c && c.clientId === 'short' ? 1 : 3600),
  },
  cookies: { keys: ['test-cookie-key-not-secret'] },
  async findAccount(ctx, id) {
    const account = ACCOUNTS[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, preferred_username: id, name: id, ...account };
      },
    };
  },
  // a first-party application: no consent screen (every asked scope granted)
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope('openid profile email groups');
    await grant.save();
    return grant;
  },
});

provider.listen(port, '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
