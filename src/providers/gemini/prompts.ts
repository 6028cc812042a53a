/**
 * What the service asks Gemini, in words. The attached images come first; these prompts say what they are and
 * what to make of them. Written in English, with the language of any visible or returned text named explicitly.
 */
import { CATEGORY_IDS, findCategory } from '../../generation/catalogue';
import type { CardJob, EditJob, FunnelProductJob, IdeaJob, PhotoJob, ScenarioJob, WishesJob } from '../provider';
import type { Locale } from '../../locale';

export const LANGUAGE: Record<Locale, string> = { ru: 'Russian', en: 'English', es: 'Spanish' };

const words = (id: string) => id.replace(/_/g, ' ');
const lines = (...parts: (string | false | undefined)[]) => parts.filter(Boolean).join('\n');
const quoted = (text: string) => `"""\n${text}\n"""`;

const PHOTO_STYLE: Record<PhotoJob['photoStyle'], string> = {
  classic: 'a clean studio shot on a seamless backdrop, soft even light, the product sharp and centred',
  home: 'a lifestyle shot in a real, tidy home interior, natural window light, the product the clear subject',
};

export function photoPrompt(job: PhotoJob): string {
  return lines(
    `Create a professional e-commerce photo of the product "${job.productName}" shown in the attached photo${job.images.length > 1 ? 's' : ''}.`,
    'Keep the product exactly as it is: shape, proportions, colours, materials, labels and logos.',
    `Category: ${words(job.categoryId)}. Concept: ${words(job.conceptId)}.`,
    `Style: ${PHOTO_STYLE[job.photoStyle]}.`,
    job.comment && `The client asks: ${quoted(job.comment)}`,
    `Any text that appears in the picture is in ${LANGUAGE[job.locale]}.`,
    `Frame: aspect ratio ${job.aspectRatio}, no borders, no watermark.`,
  );
}

/** How closely an infographic follows its design reference (0 copies it, 1 interprets freely). */
function creativityWords(creativity: number): string {
  if (creativity <= 0.2) return 'copy its layout, palette and typography closely';
  if (creativity >= 0.8) return 'take it as loose inspiration and design freely';
  return 'follow its layout and palette, adapting details freely';
}

export function cardPrompt(job: CardJob): string {
  const photos = job.images.length;
  if (job.style === 'cinematic') {
    return lines(
      `Create a cinematic advertising frame of the product "${job.productName}" shown in the attached photo${photos > 1 ? 's' : ''}.`,
      'Keep the product exactly as it is. Dramatic, moody light, shallow depth of field, a clean composition.',
      `Category: ${words(job.categoryId)}. Mood to convey: ${quoted(job.userText)}`,
      'The frame contains no text, no letters, no logos other than those on the product.',
      `Frame: aspect ratio ${job.aspectRatio}.`,
    );
  }
  return lines(
    `Design a marketing infographic card for the product "${job.productName}" shown in the first ${photos > 1 ? `${photos} attached photos` : 'attached photo'}.`,
    'Keep the product exactly as it is: shape, colours, materials, labels.',
    `Category: ${words(job.categoryId)}. Concept: ${words(job.conceptId)}.`,
    `The card shows this text, in ${LANGUAGE[job.locale]}, as panels with small icons, spelled exactly as written:`,
    quoted(job.userText),
    job.designKey && `Design theme: ${words(job.designKey)}.`,
    job.designReference && `The last attached image is the design reference: ${creativityWords(job.creativity)} (creativity ${job.creativity}).`,
    !job.designReference && `Creativity ${job.creativity} on a scale from 0 (restrained, conventional) to 1 (bold, free).`,
    `Frame: aspect ratio ${job.aspectRatio}, no watermark.`,
  );
}

export function editPrompt(job: EditJob): string {
  return lines(
    'Edit the attached image as asked, and change nothing else: same product, composition, framing and text.',
    `The request: ${quoted(job.instruction)}`,
  );
}

export function analysisPrompt(locale: Locale): string {
  return lines(
    'You look at photos of one product for an online shop.',
    `Answer with the catalogue category (one of: ${CATEGORY_IDS.join(', ')}; "other" when none fits),`,
    'a short product name as a shopper would search for it (2-6 words, no brand guesses),',
    'and 3 short selling qualities visible in the photos (2-5 words each).',
    `Write the name and the qualities in ${LANGUAGE[locale]}.`,
  );
}

export function wishesPrompt(job: WishesJob): string {
  return lines(
    'Write the text of a marketing card for the product in the attached photos.',
    job.productName ? `The product: "${job.productName}".` : 'Name the product from the photos.',
    `Category: ${words(job.categoryId)}. Concept of the card: ${words(job.conceptId)}.`,
    'Give a short headline, then 3 to 5 selling points of at most 8 words each, one per line, without numbering or emoji.',
    `Write in ${LANGUAGE[job.locale]}.`,
  );
}

export function scenarioPrompt(job: ScenarioJob): string {
  return lines(
    'Write the scenario of a 5 to 10 second product video made from the attached photo.',
    job.productName && `The product: "${job.productName}".`,
    job.categoryId && `Category: ${words(job.categoryId)}.`,
    'Describe in 1 to 3 sentences the camera movement, the light and what happens, keeping the product as it is in the photo.',
    `Write in ${LANGUAGE[job.locale]}, at most 600 characters.`,
  );
}

const productLines = (job: FunnelProductJob) => [
  `The product: "${job.productName}", category ${words(job.categoryId)}.`,
  job.qualities.length > 0 && `Its qualities: ${job.qualities.join('; ')}.`,
];

export function surveyPrompt(job: FunnelProductJob): string {
  return lines(
    'A seller is about to order a marketing card for the product in the attached photos.',
    ...productLines(job),
    'Ask 3 to 5 short questions whose answers would most change the card (audience, mood, what to show, what it must say).',
    'Give each a short snake_case id, its text, and its kind: "single" or "multiple" with 2 to 6 short choices, or "text" without choices.',
    `Write the questions and the choices in ${LANGUAGE[job.locale]}.`,
  );
}

/** The concepts an idea may suggest: the category's own, or the generic `infographic`. */
export const ideaConcepts = (categoryId: string): string[] => ['infographic', ...(findCategory(categoryId)?.concepts.map((c) => c.id) ?? [])];

export function ideaPrompt(job: IdeaJob): string {
  return lines(
    'Propose one idea for a marketing card of the product in the attached photos.',
    ...productLines(job),
    job.existingTitles.length > 0 && `It must differ from these ideas already proposed: ${job.existingTitles.map((t) => `"${t}"`).join(', ')}.`,
    'Give a short title (at most 8 words), a one-sentence description of what the card shows,',
    `a concept (one of: ${ideaConcepts(job.categoryId).join(', ')}) and a style: "infographic" (text, icons, panels) or "cinematic" (a clean frame without text).`,
    `Write the title and the description in ${LANGUAGE[job.locale]}.`,
  );
}
