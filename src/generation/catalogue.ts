/** The fixed category and concept catalogue of the contract, with its Russian labels. */
export interface Concept { id: string; name: string }
export interface Category { id: string; name: string; concepts: Concept[] }

export const CATEGORIES: readonly Category[] = [
  {
    id: 'apparel', name: 'Одежда', concepts: [
      { id: 'apparel_on_model', name: 'На модели' },
      { id: 'apparel_mannequin', name: 'На манекене' },
      { id: 'apparel_flat_lay', name: 'Раскладка' },
      { id: 'apparel_studio_object', name: 'Студийный предмет' },
    ],
  },
  {
    id: 'wearables', name: 'Аксессуары и украшения', concepts: [
      { id: 'wearables_on_person', name: 'На человеке' },
      { id: 'wearables_closeup', name: 'Крупный план' },
      { id: 'wearables_lifestyle', name: 'Лайфстайл' },
      { id: 'wearables_studio', name: 'Студия' },
    ],
  },
  {
    id: 'food', name: 'Еда и напитки', concepts: [
      { id: 'food_catalog', name: 'Каталог' },
      { id: 'food_plated', name: 'Подача' },
      { id: 'food_ingredients', name: 'С ингредиентами' },
      { id: 'food_closeup', name: 'Крупный план' },
    ],
  },
  {
    id: 'cosmetics', name: 'Косметика и уход', concepts: [
      { id: 'cosmetics_composition', name: 'Композиция' },
      { id: 'cosmetics_in_use', name: 'В использовании' },
      { id: 'cosmetics_lifestyle', name: 'Лайфстайл' },
      { id: 'cosmetics_catalog', name: 'Каталог' },
    ],
  },
  {
    id: 'gadgets', name: 'Электроника и гаджеты', concepts: [
      { id: 'gadgets_in_use', name: 'В использовании' },
      { id: 'gadgets_environment', name: 'В окружении' },
      { id: 'gadgets_details', name: 'Детали' },
      { id: 'gadgets_studio', name: 'Студия' },
    ],
  },
  {
    id: 'home', name: 'Дом и интерьер', concepts: [
      { id: 'home_interior', name: 'В интерьере' },
      { id: 'home_scale', name: 'Масштаб' },
      { id: 'home_details', name: 'Детали' },
      { id: 'home_catalog', name: 'Каталог' },
    ],
  },
  {
    id: 'other', name: 'Другое', concepts: [
      { id: 'other_in_use', name: 'В использовании' },
      { id: 'other_environment', name: 'В окружении' },
      { id: 'other_catalog', name: 'Каталог' },
    ],
  },
];

export const CATEGORY_IDS = CATEGORIES.map((c) => c.id);
export const CONCEPT_IDS = CATEGORIES.flatMap((c) => c.concepts.map((k) => k.id));

export function findCategory(id: string): Category | undefined {
  return CATEGORIES.find((c) => c.id === id);
}

/** The category a concept belongs to, if the concept is a catalogue concept. */
export function categoryOfConcept(conceptId: string): Category | undefined {
  return CATEGORIES.find((c) => c.concepts.some((k) => k.id === conceptId));
}
