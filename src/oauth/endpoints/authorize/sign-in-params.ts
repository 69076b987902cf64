import { type Acr, requestedAcr, strongerAcr } from '../../../auth/acr';
import { usableLoginHint } from '../../oidc/oidc.scopes';

/**
 * The `prompt` values (OpenID Connect Core 3.1.2.1) this server acts on. `select_account` shows the login page,
 * where any account may be chosen, as `login` does.
 */
export const PROMPT_VALUES = ['none', 'login', 'consent', 'select_account'] as const;
export type Prompt = (typeof PROMPT_VALUES)[number];

const ACR_VALUES_PARAM = /^[\x21-\x7E]+( [\x21-\x7E]+)*$/;

/** The largest `max_age` taken (about 68 years, in seconds): anything larger means the same. */
const MAX_AGE_LIMIT = 2 ** 31 - 1;

/** What an authorization request asks of the sign-in behind it. */
export interface SignInParams {
  prompt: Set<Prompt>;
  maxAge: number | null;
  loginHint: string | null;
  /** The level asked for (`acr_values`), or the client's own minimum when that is stronger. */
  acr: Acr | null;
}

/** `prompt`, `max_age`, `login_hint` and `acr_values` of a request as sent, or why they are invalid. */
export function signInParamsOf(sent: Record<string, string | undefined>, clientMinimum: Acr | null): SignInParams | { invalid: string } {
  const prompt = new Set<Prompt>();
  for (const value of (sent.prompt ?? '').split(' ').filter(Boolean)) {
    if (!(PROMPT_VALUES as readonly string[]).includes(value)) return { invalid: `prompt ${value} is not supported.` };
    prompt.add(value as Prompt);
  }
  if (prompt.has('none') && prompt.size > 1) return { invalid: 'prompt=none cannot be combined with other values.' };

  let maxAge: number | null = null;
  if (sent.max_age !== undefined) {
    if (!/^\d{1,20}$/.test(sent.max_age)) return { invalid: 'max_age must be a whole number of seconds.' };
    maxAge = Math.min(Number(sent.max_age), MAX_AGE_LIMIT);
  }
  const loginHint = usableLoginHint(sent.login_hint) ?? null;
  // acr_values: a preference list (Core 3.1.2.1); values this server does not know are passed over.
  if (sent.acr_values !== undefined && (sent.acr_values.length > 512 || !ACR_VALUES_PARAM.test(sent.acr_values))) {
    return { invalid: 'acr_values must be space-separated printable ASCII values (at most 512 characters).' };
  }
  const acr = strongerAcr(requestedAcr((sent.acr_values ?? '').split(' ')), clientMinimum);
  return { prompt, maxAge, loginHint, acr };
}
