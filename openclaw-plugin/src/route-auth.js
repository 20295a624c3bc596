// The endpoint and credentials OpenClaw prepared for an attempt's route, for a harness whose auth
// is the host's (config `auth: "host"`). They reach the bridge in `attempt/run` only, and from
// there the native process's environment; nothing here logs them.

/**
 * `{baseUrl?, apiKey?, headers?}` from the attempt params (`model.baseUrl`, `model.headers`, the
 * resolved key or the auth storage's key for the provider), or undefined when OpenClaw prepared
 * nothing.
 *
 * @param {object} params the attempt params
 * @returns {Promise<{baseUrl?: string, apiKey?: string, headers?: Record<string,string>} | undefined>}
 */
export async function routeAuth(params) {
  const auth = {};
  const baseUrl = params?.model?.baseUrl;
  if (typeof baseUrl === "string" && baseUrl.trim()) auth.baseUrl = baseUrl.trim();
  const apiKey = await preparedKey(params);
  if (apiKey) auth.apiKey = apiKey;
  const headers = {};
  const modelHeaders = params?.model?.headers;
  if (modelHeaders && typeof modelHeaders === "object" && !Array.isArray(modelHeaders)) {
    for (const [name, value] of Object.entries(modelHeaders)) {
      if (typeof value === "string" && name) headers[name] = value;
    }
  }
  if (Object.keys(headers).length > 0) auth.headers = headers;
  return Object.keys(auth).length > 0 ? auth : undefined;
}

/** The key OpenClaw resolved for this attempt: `resolvedApiKey`, else its auth storage's. */
async function preparedKey(params) {
  if (typeof params?.resolvedApiKey === "string" && params.resolvedApiKey) return params.resolvedApiKey;
  const storage = params?.authStorage;
  if (typeof storage?.getApiKey !== "function") return undefined;
  try {
    const key = await storage.getApiKey(params.provider);
    return typeof key === "string" && key ? key : undefined;
  } catch {
    // No credential for the provider: the native runtime's request fails and says so.
    return undefined;
  }
}
