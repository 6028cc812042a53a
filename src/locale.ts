/** The languages of generated text and of the AI helpers' answers. */
export const LOCALES = ['ru', 'en', 'es'] as const;

export type Locale = (typeof LOCALES)[number];

/** The body's locale, else the best supported language of Accept-Language, else `ru`. */
export function resolveLocale(explicit: Locale | undefined, acceptLanguage: string | undefined): Locale {
  if (explicit) return explicit;
  const ranked = (acceptLanguage ?? '')
    .split(',')
    .map((part, index) => {
      const [tag, ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([\d.]+)\s*$/.exec(p)).find(Boolean);
      return { lang: tag.trim().toLowerCase().split('-')[0], q: q ? Number(q[1]) : 1, index };
    })
    .filter((entry) => entry.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  return (ranked.find((entry) => (LOCALES as readonly string[]).includes(entry.lang))?.lang as Locale) ?? 'ru';
}
