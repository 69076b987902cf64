/** Any C0 control character or DEL: what an identifier, an email address or a one-line name never holds. */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;
