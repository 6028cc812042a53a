/**
 * The local funnel texts: survey questions and card ideas, deterministic, in ru, en and es. No model: the questions
 * are the ones a seller is always worth asking, with the analysed qualities as choices, and the ideas walk a fixed
 * list of angles over the category's concepts, skipping the titles already in the pool.
 */
import { findCategory } from '../../generation/catalogue';
import type { CardIdea, CardStyle, FunnelProductJob, IdeaJob, SurveyQuestion } from '../provider';
import type { Locale } from '../../locale';
import type { Phrase } from './texts';

const AUDIENCE: Phrase = { ru: 'Кто чаще всего покупает этот товар?', en: 'Who buys this product most often?', es: '¿Quién compra este producto con más frecuencia?' };
const AUDIENCE_CHOICES: Record<Locale, string[]> = {
  ru: ['Для себя', 'В подарок', 'Для семьи', 'Для работы'],
  en: ['For themselves', 'As a gift', 'For the family', 'For work'],
  es: ['Para sí mismos', 'Para regalar', 'Para la familia', 'Para el trabajo'],
};
const TONE: Phrase = { ru: 'Каким должно быть настроение карточки?', en: 'What mood should the card have?', es: '¿Qué ambiente debe tener la tarjeta?' };
const TONE_CHOICES: Record<Locale, string[]> = {
  ru: ['Спокойное и премиальное', 'Яркое и энергичное', 'Тёплое и домашнее'],
  en: ['Calm and premium', 'Bright and energetic', 'Warm and homely'],
  es: ['Sereno y premium', 'Vivo y enérgico', 'Cálido y hogareño'],
};
const FOCUS: Phrase = { ru: 'Что важнее всего показать?', en: 'What matters most to show?', es: '¿Qué es lo más importante mostrar?' };
const MUST_SAY: Record<Locale, (name: string) => string> = {
  ru: (name) => `Что обязательно должно быть написано на карточке «${name}»?`,
  en: (name) => `What must the card for “${name}” say?`,
  es: (name) => `¿Qué debe decir sin falta la tarjeta de «${name}»?`,
};

export function localSurveyQuestions(job: FunnelProductJob): SurveyQuestion[] {
  const { locale } = job;
  return [
    { id: 'audience', text: AUDIENCE[locale], kind: 'single', choices: AUDIENCE_CHOICES[locale] },
    { id: 'mood', text: TONE[locale], kind: 'single', choices: TONE_CHOICES[locale] },
    { id: 'focus', text: FOCUS[locale], kind: 'multiple', choices: job.qualities.slice(0, 5) },
    { id: 'must_say', text: MUST_SAY[locale](job.productName), kind: 'text' },
  ];
}

/** The angles an idea can take, in the order they are offered. */
const ANGLES: { title: Phrase; description: Phrase; style: CardStyle }[] = [
  { title: { ru: 'Главное преимущество', en: 'The main advantage', es: 'La ventaja principal' },
    description: { ru: 'крупно товар и одна главная выгода', en: 'the product large, with its one main benefit', es: 'el producto en grande, con su ventaja principal' }, style: 'infographic' },
  { title: { ru: 'Атмосфера', en: 'Atmosphere', es: 'Ambiente' },
    description: { ru: 'чистый кадр без текста, товар в своей среде', en: 'a clean frame without text, the product in its setting', es: 'un encuadre limpio sin texto, el producto en su entorno' }, style: 'cinematic' },
  { title: { ru: 'Три причины купить', en: 'Three reasons to buy', es: 'Tres razones para comprar' },
    description: { ru: 'три коротких довода с иконками', en: 'three short reasons with icons', es: 'tres razones breves con iconos' }, style: 'infographic' },
  { title: { ru: 'Крупный план', en: 'Close-up', es: 'Primer plano' },
    description: { ru: 'детали и фактура вблизи', en: 'details and texture up close', es: 'detalles y textura de cerca' }, style: 'cinematic' },
  { title: { ru: 'Характеристики', en: 'Specifications', es: 'Características' },
    description: { ru: 'товар и его характеристики в панелях', en: 'the product and its specifications in panels', es: 'el producto y sus características en paneles' }, style: 'infographic' },
  { title: { ru: 'В подарок', en: 'As a gift', es: 'Para regalar' },
    description: { ru: 'праздничная подача, товар как подарок', en: 'a festive look, the product as a present', es: 'una presentación festiva, el producto como regalo' }, style: 'cinematic' },
  { title: { ru: 'До и после', en: 'Before and after', es: 'Antes y después' },
    description: { ru: 'что меняется с этим товаром', en: 'what changes with this product', es: 'qué cambia con este producto' }, style: 'infographic' },
  { title: { ru: 'Каждый день', en: 'Every day', es: 'Cada día' },
    description: { ru: 'товар в обычном дне покупателя', en: "the product in a buyer's ordinary day", es: 'el producto en el día a día del comprador' }, style: 'cinematic' },
];

const IDEA_TITLE: Record<Locale, (angle: string, name: string) => string> = {
  ru: (angle, name) => `${angle}: «${name}»`,
  en: (angle, name) => `${angle}: “${name}”`,
  es: (angle, name) => `${angle}: «${name}»`,
};

/** The first angle whose title is not in the pool yet; past the list, the angles come round again, numbered. */
export function localIdea(job: IdeaJob): CardIdea {
  const taken = new Set(job.existingTitles.map((t) => t.trim().toLowerCase()));
  const concepts = findCategory(job.categoryId)?.concepts.map((c) => c.id) ?? [];
  for (let i = 0; ; i++) {
    const angle = ANGLES[i % ANGLES.length];
    const round = Math.floor(i / ANGLES.length);
    const title = IDEA_TITLE[job.locale](angle.title[job.locale], job.productName) + (round ? ` (${round + 1})` : '');
    if (taken.has(title.toLowerCase())) continue;
    const conceptId = angle.style === 'infographic' ? 'infographic' : concepts[i % Math.max(concepts.length, 1)] ?? 'infographic';
    return { title, description: `${angle.description[job.locale]}.`, concept_id: conceptId, style: angle.style };
  }
}
