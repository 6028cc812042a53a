/**
 * The local text helpers: deterministic marketing text and video scenarios built from what the local analysis reads
 * from the photo (its dominant colour) and from the request, in ru, en and es. Honest about what they are: no model,
 * but usable text that names the product and follows the chosen concept.
 */
import { findCategory } from '../../domain/catalogue';
import type { Locale, ProductAnalysis, ScenarioJob, WishesJob } from '../provider';

const WISHES: Record<Locale, (name: string, concept: string, qualities: string[]) => string> = {
  ru: (name, concept, q) => `${name}: ${q.join(', ').toLowerCase()}.\nСцена: ${concept}.\nКрупно покажите фактуру и детали, фон спокойный, свет мягкий.`,
  en: (name, concept, q) => `${name}: ${q.join(', ').toLowerCase()}.\nScene: ${concept}.\nShow texture and details up close, on a calm background in soft light.`,
  es: (name, concept, q) => `${name}: ${q.join(', ').toLowerCase()}.\nEscena: ${concept}.\nMuestre la textura y los detalles de cerca, con fondo sereno y luz suave.`,
};

const SCENARIO: Record<Locale, (name: string) => string> = {
  ru: (name) => `Камера медленно приближается к товару «${name}», мягкий свет скользит по поверхности, в конце товар в центре кадра.`,
  en: (name) => `The camera slowly pushes in on the ${name}; soft light glides across its surface and it ends centred in frame.`,
  es: (name) => `La cámara se acerca despacio a «${name}»; una luz suave recorre su superficie y termina centrado en el encuadre.`,
};

/** A concept id as words (`home_interior` → `home interior`), or its catalogue name in Russian. */
function conceptWords(categoryId: string, conceptId: string, locale: Locale): string {
  const named = findCategory(categoryId)?.concepts.find((c) => c.id === conceptId)?.name;
  return locale === 'ru' && named ? named.toLowerCase() : conceptId.replace(/_/g, ' ');
}

export function localWishes(job: WishesJob, analysis: ProductAnalysis): string {
  const name = job.productName ?? analysis.product_name;
  return WISHES[job.locale](name, conceptWords(job.categoryId, job.conceptId, job.locale), analysis.qualities);
}

export function localScenario(job: ScenarioJob, analysis: ProductAnalysis): string {
  return SCENARIO[job.locale](job.productName ?? analysis.product_name);
}
