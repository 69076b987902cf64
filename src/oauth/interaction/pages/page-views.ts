/* What each page shows: the data a controller hands to `OAuthPages`. */

export interface LoginPageView {
  returnTo: string;
  csrf: string;
  /** A generic failure message after wrong credentials. */
  error?: string;
  email?: string;
  /** "Sign in with …" links to the company identity providers. */
  connections?: { name: string; href: string }[];
}

export interface ForgotPasswordPageView {
  csrf: string;
  error?: string;
}

export interface ResetPasswordPageView {
  /** The link's secret, posted back with the new password. */
  token: string;
  csrf: string;
  error?: string;
}

export interface ConsentPageView {
  clientName: string;
  /** The scopes the person is asked for: new to this client, or all the request names with prompt=consent. */
  scopes: { name: string; description: string }[];
  /** Scopes of the request the person allowed this client before (step-up): named, not asked again. */
  alreadyAllowed?: { name: string; description: string }[];
  csrf: string;
  /** The authorization request's parameters, carried back as hidden fields. */
  params: Record<string, string | undefined>;
  /**
   * A client identified by the URL of its own metadata document (not registered here): the host serving that
   * document, the host the browser goes back to, and whether every redirect URI it has is on the person's own
   * machine (localhost or a loopback address).
   */
  metadataDocument?: { documentHost: string; redirectHost: string; loopbackOnly: boolean };
  /** A client that registered itself (RFC 7591): its name is its own claim, which the page says. */
  selfRegistered?: boolean;
}

export interface LogoutPageView {
  /** The client that asked for the logout, if it is known. */
  clientName: string | null;
  csrf: string;
  /** The logout request's parameters, carried back as hidden fields. */
  params: Record<string, string | undefined>;
}

export interface ConnectedAppView {
  clientId: string;
  name: string;
  scopes: { name: string; description: string }[];
  /** Epoch ms. */
  grantedAt: number;
  /** Epoch ms; null when no grant of the app is in force (only the consent is). */
  lastUsedAt: number | null;
}

/** What every account page shows around itself: who is signed in (their e-mail). */
export interface AccountFrameView {
  signedInAs: string;
  csrf: string;
}

export interface ConnectedAppsPageView extends AccountFrameView {
  apps: ConnectedAppView[];
}

/**
 * The second step of a sign-in: the form for a code of the person's authenticator or a recovery code (`totp`), the
 * button to use one of their passkeys (`passkey`), or both.
 */
export interface SecondFactorPageView {
  csrf: string;
  totp: boolean;
  passkey: boolean;
  /**
   * A signed-in person whose sign-in is too old for the request (`max_age`) confirms it is them with a passkey (the
   * form posts `step=reauth` and `return_to`), not a second factor after a password.
   */
  reauthenticate?: { returnTo: string };
  error?: string;
}

/** A passkey as the account page lists it. */
export interface PasskeyItemView {
  id: string;
  name: string;
  /** Epoch ms. */
  createdAt: number;
  lastUsedAt: number | null;
  /** Synced between the person's devices (a password manager, a platform account), or bound to one authenticator. */
  deviceType: 'singleDevice' | 'multiDevice';
}

/** At sign-in, for a person whose role needs a second factor and who has none: the authenticator to set up. */
export interface SignInEnrolmentPageView {
  csrf: string;
  qrSvg: string;
  secret: string;
  error?: string;
}

/** The account's security page: the authenticator's state and what can be done with it. */
export interface AccountSecurityPageView extends AccountFrameView {
  totp: 'none' | 'pending' | 'active';
  recoveryCodesLeft: number;
  /** While setting up an authenticator: the QR code (an SVG element) and the secret to type instead. */
  enrolment?: { qrSvg: string; secret: string };
  /** Right after the authenticator is confirmed: the recovery codes, shown this once. */
  recoveryCodes?: string[];
  passkeys: PasskeyItemView[];
  /**
   * A password-only session of a person who has a factor: the link to confirm it is them (step-up), which adding
   * or removing a factor needs first.
   */
  confirmFirst?: string;
  error?: string;
}

/** The page where a person enters the code a device shows them (RFC 8628 3.3). */
export interface DeviceCodePageView {
  csrf: string;
  /** The code as typed, shown again with an error. */
  userCode?: string;
  error?: string;
}

/** The device's request, for the person to allow or deny; the code is shown to compare with the device's. */
export interface DeviceConsentPageView {
  csrf: string;
  clientName: string;
  userCode: string;
  scopes: { name: string; description: string }[];
}
