/** Any C0 control character or DEL: what an identifier, an email address or a one-line name never holds. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/** One e-mail address, roughly as a browser's e-mail field takes it: something, an @, something, no spaces. */
export const EMAIL_ADDRESS = /^[^\s@]+@[^\s@]+$/;

/**
 * Control characters that no text field of the API has a use for: C0 but tab, line feed and carriage return, and
 * DEL. (PostgreSQL cannot store NUL in a text column at all: let through, it would fail as a 500 there.)
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const UNPRINTABLE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/**
 * A UTF-16 surrogate without its pair: a JSON body may spell one (`"\ud83d"`), but it is no character, cannot be
 * encoded in UTF-8, and makes some validators throw (validator's `isEmail` runs `encodeURI` on it).
 */
export const UNPAIRED_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
