/**
 * The local text helpers: deterministic marketing text and video scenarios built from what the local analysis reads
 * from the photo (its dominant colour) and from the request (product name, category, concept), in ru, en and es.
 * Honest about what they are: no model, but usable text that names the product, describes the chosen scene and
 * keeps to what the photo shows.
 */
import type { ProductAnalysis, ScenarioJob, WishesJob } from '../provider';
import type { Locale } from '../../locale';

/** One text in each locale. */
export type Phrase = Record<Locale, string>;

/** What a concept's scene shows, by the concept's last words (`apparel_on_model` → `on_model`). */
const SCENES: Record<string, Phrase> = {
  on_model: { ru: 'на модели, в естественной позе', en: 'worn by a model in a natural pose', es: 'puesto en un modelo, en una pose natural' },
  mannequin: { ru: 'на манекене, чтобы была видна посадка', en: 'on a mannequin, so the fit shows', es: 'en un maniquí, para que se vea el ajuste' },
  flat_lay: { ru: 'в раскладке, вид сверху', en: 'laid flat and seen from above', es: 'extendido y visto desde arriba' },
  studio_object: { ru: 'как предмет в студии, на чистом фоне', en: 'as a studio object on a clean background', es: 'como objeto de estudio sobre un fondo limpio' },
  on_person: { ru: 'на человеке, в естественном движении', en: 'worn by a person in a natural movement', es: 'llevado por una persona, en un gesto natural' },
  closeup: { ru: 'крупным планом', en: 'in close-up', es: 'en primer plano' },
  lifestyle: { ru: 'в повседневной жизни', en: 'in an everyday lifestyle scene', es: 'en una escena cotidiana' },
  studio: { ru: 'в студии, на чистом фоне', en: 'in the studio, on a clean background', es: 'en estudio, sobre un fondo limpio' },
  catalog: { ru: 'как в каталоге: целиком, на светлом фоне', en: 'as a catalogue shot: whole, on a light background', es: 'como foto de catálogo: entero, sobre fondo claro' },
  plated: { ru: 'в красивой подаче', en: 'plated and ready to serve', es: 'emplatado y listo para servir' },
  ingredients: { ru: 'рядом со своими ингредиентами', en: 'next to its ingredients', es: 'junto a sus ingredientes' },
  composition: { ru: 'в композиции с подходящими предметами', en: 'in a composition with matching props', es: 'en una composición con accesorios a juego' },
  in_use: { ru: 'в использовании', en: 'in use', es: 'en uso' },
  environment: { ru: 'в подходящем окружении', en: 'in a fitting setting', es: 'en un entorno adecuado' },
  details: { ru: 'с акцентом на детали', en: 'with the focus on its details', es: 'con el foco en sus detalles' },
  interior: { ru: 'в интерьере', en: 'in a room interior', es: 'en un interior' },
  scale: { ru: 'рядом с привычными предметами, чтобы был виден размер', en: 'next to everyday objects, so its size shows', es: 'junto a objetos cotidianos, para que se vea su tamaño' },
  infographic: { ru: 'на инфографике с короткими подписями', en: 'on an infographic with short captions', es: 'en una infografía con textos breves' },
};

/** What the light of a video brings out, by category. */
const FOCUS: Record<string, Phrase> = {
  apparel: { ru: 'фактуру ткани', en: 'the texture of the fabric', es: 'la textura del tejido' },
  wearables: { ru: 'блеск и мелкие детали', en: 'the shine and the small details', es: 'el brillo y los pequeños detalles' },
  food: { ru: 'свежесть и цвет', en: 'its freshness and colour', es: 'su frescura y su color' },
  cosmetics: { ru: 'текстуру и упаковку', en: 'the texture and the packaging', es: 'la textura y el envase' },
  gadgets: { ru: 'линии и отделку корпуса', en: 'the lines and finish of the body', es: 'las líneas y el acabado' },
  home: { ru: 'материалы и форму', en: 'the materials and the shape', es: 'los materiales y la forma' },
  other: { ru: 'форму и поверхность', en: 'its shape and surface', es: 'su forma y su superficie' },
};

/** The scene of a concept; a concept outside the table is named by its own words. */
function scene(categoryId: string, conceptId: string, locale: Locale): string {
  const key = conceptId.startsWith(`${categoryId}_`) ? conceptId.slice(categoryId.length + 1) : conceptId;
  const fallback: Phrase = { ru: `в сцене «${key.replace(/_/g, ' ')}»`, en: `in a "${key.replace(/_/g, ' ')}" scene`, es: `en una escena «${key.replace(/_/g, ' ')}»` };
  return (SCENES[key] ?? fallback)[locale];
}

const WISHES: Record<Locale, (name: string, scene: string, qualities: string, colour: string) => string> = {
  ru: (name, s, q, c) => `«${name}» ${s}.\nПодчеркните: ${q}.\nЦвет товара (${c}) сохраните как на фото; спокойный фон, мягкий свет, без текста поверх товара.`,
  en: (name, s, q, c) => `“${name}” ${s}.\nBring out: ${q}.\nKeep the product's colour (${c}) as in the photo; a calm background, soft light, no text over the product.`,
  es: (name, s, q, c) => `«${name}» ${s}.\nDestaque: ${q}.\nMantenga el color del producto (${c}) como en la foto; fondo sereno, luz suave, sin texto sobre el producto.`,
};

const SCENARIO: Record<Locale, (name: string, focus: string) => string> = {
  ru: (name, f) => `Камера медленно приближается к товару «${name}»; мягкий свет скользит по нему и подчёркивает ${f}. В конце товар в центре кадра.`,
  en: (name, f) => `The camera slowly pushes in on “${name}”; soft light glides across it and brings out ${f}. It ends with the product centred in frame.`,
  es: (name, f) => `La cámara se acerca despacio a «${name}»; una luz suave lo recorre y resalta ${f}. Termina con el producto centrado en el encuadre.`,
};

/** `colour` is the colour word the local analysis read from the first photo. */
export function localWishes(job: WishesJob, analysis: ProductAnalysis, colour: string): string {
  const name = job.productName ?? analysis.product_name;
  const qualities = analysis.qualities.join(', ').toLowerCase();
  return WISHES[job.locale](name, scene(job.categoryId, job.conceptId, job.locale), qualities, colour.toLowerCase());
}

export function localScenario(job: ScenarioJob, analysis: ProductAnalysis): string {
  const focus = FOCUS[job.categoryId ?? analysis.category_id] ?? FOCUS.other;
  return SCENARIO[job.locale](job.productName ?? analysis.product_name, focus[job.locale]);
}
