// A real OpenID Connect provider on loopback for ReForm's single sign-on browser tests:
// the certified `oidc-provider` package (panva/node-oidc-provider), with its development
// sign-in form (any login name, any password) and its consent screen.
//
//   node provider.mjs CONFIG_JSON
//
// CONFIG_JSON: {"port": 0, "host": "127.0.0.1", "issuer": "http://127.0.0.1:PORT",
//   "client_id": "...", "client_secret": "...", "redirect_uri": "http://.../oauth2callback",
//   "accounts_file": "/tmp/.../accounts.json", "claims_in_id_token": false}
//
// accounts_file maps a login (the subject, `sub`) to its claims, e.g.
// {"u-alice": {"email": "Alice@Example.com", "email_verified": true, "name": "Alice"}};
// it is read at every claims request, so a test can change an identity between sign-ins.
// With claims_in_id_token false (the package's certified default, conformIdTokenClaims)
// the ID token carries only `sub` and the claims come from the userinfo endpoint.
// Prints "ready <issuer>" once it listens.
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';

const cfg = JSON.parse(process.argv[2]);

function accountClaims(sub) {
  const accounts = JSON.parse(readFileSync(cfg.accounts_file, 'utf8'));
  return { ...(accounts[sub] || {}), sub };
}

const provider = new Provider(cfg.issuer, {
  clients: [{
    client_id: cfg.client_id,
    client_secret: cfg.client_secret,
    redirect_uris: [cfg.redirect_uri],
    post_logout_redirect_uris: [cfg.redirect_uri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  conformIdTokenClaims: !cfg.claims_in_id_token,
  cookies: { keys: ['reform-test-only-cookie-key'] },
  features: { devInteractions: { enabled: true }, rpInitiatedLogout: { enabled: true } },
  async findAccount(ctx, sub) {
    return { accountId: sub, async claims() { return accountClaims(sub); } };
  },
});
provider.proxy = false;

const server = provider.listen(cfg.port, cfg.host || '127.0.0.1', () => {
  console.log(`ready ${cfg.issuer}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
